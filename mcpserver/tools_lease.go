package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// LeaseIn is the lease tool's argument: one tool takes, renews (the same
// paths again) and releases, to keep what the model reads small (DESIGN
// section 13, P11).
type LeaseIn struct {
	Session
	Paths   []string `json:"paths,omitempty" jsonschema:"files, dirs or globs"`
	Shared  bool     `json:"shared,omitempty"`
	TTL     string   `json:"ttl,omitempty" jsonschema:"like 30m"`
	Reason  string   `json:"reason,omitempty"`
	Keep    bool     `json:"keep,omitempty" jsonschema:"outlive session"`
	Release bool     `json:"release,omitempty"`
}

// LeaseView is a live lease as the tools show it.
type LeaseView struct {
	ID        string    `json:"id"`
	Holder    string    `json:"holder"`
	Paths     []string  `json:"paths"`
	Exclusive bool      `json:"exclusive"`
	Reason    string    `json:"reason,omitempty"`
	TaskID    string    `json:"task_id,omitempty"`
	ExpiresAt time.Time `json:"expires_at"`
}

func leaseView(l fsstore.Lease) LeaseView {
	return LeaseView{ID: l.ID, Holder: l.Holder, Paths: l.Paths, Exclusive: l.Exclusive, Reason: l.Reason, TaskID: l.TaskID, ExpiresAt: l.ExpiresAt}
}

// LeaseOut is the lease tool's result: the caller's live leases.
type LeaseOut struct {
	Leases      []LeaseView `json:"leases" jsonschema:"your live leases"`
	Instruction string      `json:"instruction"`
}

func leaseTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "lease",
			Description: "Lease paths to edit; others' edits are refused. Again renews.",
			Annotations: mutating,
		},
		level: Authenticated,
		add:   addLease,
	}
}

func addLease(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in LeaseIn) (*mcp.CallToolResult, LeaseOut, error) {
		ses := sessionFrom(ctx)
		var done string
		if in.Release {
			ended, err := s.store.ReleaseLeases(ctx, ses.Agent, in.Paths)
			if err != nil {
				return nil, LeaseOut{}, fromStore(err, "lease_not_found")
			}
			done = fmt.Sprintf("Released %d lease(s).", len(ended))
		} else {
			l, err := s.takeLease(ctx, ses, in)
			if err != nil {
				return nil, LeaseOut{}, err
			}
			done = fmt.Sprintf("Leased %s until %s; take the same paths again to renew, and release when done.", strings.Join(l.Paths, ", "), l.ExpiresAt.Format(time.RFC3339))
		}
		out := LeaseOut{Leases: []LeaseView{}, Instruction: done + " Call get_next_action when your work allows."}
		all, err := s.store.Leases()
		if err != nil {
			return nil, LeaseOut{}, err
		}
		for _, l := range all {
			if l.Holder == ses.Agent {
				out.Leases = append(out.Leases, leaseView(l))
			}
		}
		return nil, out, nil
	})
}

// takeLease takes (or renews) the lease in asks for the session's agent,
// for the session's task.
func (s *Server) takeLease(ctx context.Context, ses fsstore.Session, in LeaseIn) (fsstore.Lease, error) {
	var ttl time.Duration
	if in.TTL != "" {
		d, err := time.ParseDuration(in.TTL)
		if err != nil || d <= 0 {
			return fsstore.Lease{}, toolErr("invalid_ttl", fmt.Sprintf("ttl %q is not a duration: give one like 30m or 2h", in.TTL))
		}
		ttl = d
	}
	cfg, err := s.config()
	if err != nil {
		return fsstore.Lease{}, err
	}
	l, err := s.store.TakeLease(ctx, cfg, fsstore.LeaseRequest{
		Holder: ses.Agent, Session: ses.ID, Keep: in.Keep, Paths: in.Paths, Shared: in.Shared, Reason: in.Reason, TaskID: ses.TaskID, TTL: ttl,
	})
	if errors.Is(err, fsstore.ErrLeaseConflict) {
		return l, toolErr("lease_conflict", err.Error()+". Nothing was leased.")
	}
	if err != nil {
		return l, fromStore(err, "lease_not_found")
	}
	return l, nil
}
