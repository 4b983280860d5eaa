package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// server is one `aipm serve` process and its client session.
type server struct {
	cs             *mcp.ClientSession
	cmd            *exec.Cmd
	token          string
	agent, passkey string
	closing        atomic.Bool // close was called: the session's end is no failure

	// ack is the one the last answer that carried one did: the session's
	// next call of a tool that takes one passes it, as a client does, so
	// that over HTTP (where nothing else does) it proves that answer read
	// (mcpserver/links.go).
	mu  sync.Mutex
	ack string
}

// takesAck are the tools that take an ack (mcpserver's toolSpec.takesAck).
var takesAck = []string{"get_next_action", "get_pending_messages", "get_notifications", "report_completed", "logout"}

// serve starts aipm serve in store's project and opens a chat session for
// agent (through a trigger, as the watcher would write it).
func (b *bench) serve(store *fsstore.Store, agent, passkey string, stderr io.Writer) (*server, error) {
	return b.serveOver(b.localLink(), store, agent, passkey, stderr)
}

func (s *server) call(ctx context.Context, tool string, args map[string]any, out any) error {
	args["session_token"] = s.token
	if !slices.Contains(takesAck, tool) {
		return callTool(ctx, s.cs, tool, args, out)
	}
	s.mu.Lock()
	if s.ack != "" {
		args["ack"] = s.ack
	}
	s.mu.Unlock()
	var carried struct{ Ack string }
	err := callTool(ctx, s.cs, tool, args, out, &carried)
	if err == nil {
		s.mu.Lock()
		s.ack = carried.Ack // passed on, or a new one
		s.mu.Unlock()
	}
	return err
}

func (s *server) close() {
	s.closing.Store(true)
	s.cs.Close()
}

// callTool calls a tool and decodes its structured result into each of
// outs (a nil one is skipped).
func callTool(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any, outs ...any) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	if res.IsError {
		var text []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text = append(text, tc.Text)
			}
		}
		return fmt.Errorf("%s: %s", tool, strings.Join(text, " "))
	}
	data, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	for _, out := range outs {
		if out == nil {
			continue
		}
		if err := json.Unmarshal(data, out); err != nil {
			return err
		}
	}
	return nil
}
