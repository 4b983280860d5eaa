package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// AuthenticateIn is authenticate's arguments.
type AuthenticateIn struct {
	AgentID   string `json:"agent_id"`
	Passkey   string `json:"passkey,omitempty"`
	ProjectID string `json:"project_id,omitempty"`
	Purpose   string `json:"purpose,omitempty" jsonschema:"task or chat"`
}

// AuthenticateOut is authenticate's result: the session and what to do first.
type AuthenticateOut struct {
	SessionToken string `json:"session_token"`
	SessionID    string `json:"session_id"`
	AgentID      string `json:"agent_id"`
	Purpose      string `json:"purpose" jsonschema:"task or chat: what this session is for"`
	TaskID       string `json:"task_id,omitempty"`
	IdleTimeout  string `json:"idle_timeout" jsonschema:"the session expires after this long without a call"`
	Instruction  string `json:"instruction"`
}

func authenticateTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "authenticate",
			Description: "Start your aipm session: returns session_token and purpose.",
			Annotations: mutating,
		},
		level: None,
		add:   addAuthenticate,
	}
}

func addAuthenticate(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in AuthenticateIn) (*mcp.CallToolResult, AuthenticateOut, error) {
		cfg, err := s.config()
		if err != nil {
			return nil, AuthenticateOut{}, err
		}
		purpose := in.Purpose
		if purpose == "" {
			purpose = s.purpose
		}
		if s.locked && in.AgentID != s.cred.Agent {
			return nil, AuthenticateOut{}, toolErr("wrong_agent", fmt.Sprintf("this connection is authorized as %q by its bearer token, not as %q: authenticate as %s, or connect with %s's passkey as the bearer token", s.cred.Agent, fsstore.Clip(in.AgentID, 64), s.cred.Agent, fsstore.Clip(in.AgentID, 64)))
		}
		passkey := in.Passkey
		if passkey == "" {
			if s.cred == nil || s.cred.Agent != in.AgentID {
				return nil, AuthenticateOut{}, toolErr("passkey_required", fmt.Sprintf("this aipm serve holds no passkey for %q: pass passkey, or configure the server's environment with AIPM_AGENT_ID and AIPM_PASSKEY_FILE (see aipm mcp-config)", fsstore.Clip(in.AgentID, 64)))
			}
			passkey = s.cred.Passkey
		}
		ses, token, err := s.store.Authenticate(ctx, cfg, in.AgentID, passkey, in.ProjectID, purpose)
		switch {
		case errors.Is(err, fsstore.ErrBackoff):
			return nil, AuthenticateOut{}, toolErr("authentication_backoff", err.Error())
		case errors.Is(err, fsstore.ErrBadPasskey):
			return nil, AuthenticateOut{}, toolErr("authentication_failed", fmt.Sprintf("the passkey for %q is wrong: use the passkey aipm agent add printed (or fix the file AIPM_PASSKEY_FILE names for aipm serve)", in.AgentID))
		case errors.Is(err, fsstore.ErrNothingToDo):
			return nil, AuthenticateOut{}, toolErr("nothing_to_do", err.Error()+". Exit now; aipm starts you again when there is work.")
		case errors.Is(err, fsstore.ErrNotFound):
			return nil, AuthenticateOut{}, toolErr("agent_not_found", err.Error())
		case err != nil:
			return nil, AuthenticateOut{}, toolErr("authentication_failed", err.Error())
		}
		s.opened(ses.ID)
		out := AuthenticateOut{
			SessionToken: token, SessionID: ses.ID, AgentID: ses.Agent, Purpose: ses.Purpose, TaskID: ses.TaskID,
			IdleTimeout: ses.Idle.String(),
			Instruction: fmt.Sprintf("You are in a %s session. Call get_next_action(session_token) now and follow its instruction.", ses.Purpose),
		}
		if ses.Purpose == fsstore.PurposeChat {
			out.Instruction += " " + markerHelp // once per chat session (see markerHelp)
		}
		return nil, out, nil
	})
}

// HelpIn is help's arguments.
type HelpIn struct {
	SessionToken string `json:"session_token,omitempty"`
}

// ToolHelp is one tool as help lists it.
type ToolHelp struct {
	Name      string `json:"name"`
	Level     string `json:"level"`
	Available bool   `json:"available"`
	Why       string `json:"why,omitempty" jsonschema:"why the tool is unavailable now"`
}

// HelpOut is help's result.
type HelpOut struct {
	Purpose string     `json:"purpose,omitempty"`
	Tools   []ToolHelp `json:"tools"`
	Loop    string     `json:"loop"`
	Markers string     `json:"markers" jsonschema:"the chat command markers"`
}

func helpTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "help",
			Description: "What you may call now, and why; chat markers.",
			Annotations: readOnly,
		},
		level: None,
		add:   addHelp,
	}
}

func addHelp(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in HelpIn) (*mcp.CallToolResult, HelpOut, error) {
		out := HelpOut{Loop: "authenticate, then repeat: get_next_action and do what its instruction says.", Markers: markerHelp}
		var ses *fsstore.Session
		var sesErr error
		if in.SessionToken != "" {
			got, err := s.store.CheckSession(ctx, in.SessionToken)
			if (err == nil || errors.Is(err, fsstore.ErrExpiryNotSaved)) && s.foreign(got) {
				err = fsstore.ErrNotFound // another agent's token says nothing here
			}
			if err == nil || errors.Is(err, fsstore.ErrExpiryNotSaved) {
				ses, out.Purpose = &got, got.Purpose
			} else {
				sesErr = err
			}
		}
		for _, t := range tools() {
			out.Tools = append(out.Tools, toolHelp(t.tool.Name, t.level, ses, sesErr))
		}
		sort.Slice(out.Tools, func(i, j int) bool { return out.Tools[i].Name < out.Tools[j].Name })
		return nil, out, nil
	})
}

// toolHelp says whether the caller may call the tool now, and why not:
// ses is the caller's session, nil when it has none or sesErr refused it.
func toolHelp(name string, level Level, ses *fsstore.Session, sesErr error) ToolHelp {
	h := ToolHelp{Name: name, Level: level.String(), Available: true}
	switch {
	case level == None:
	case ses == nil && sesErr != nil:
		h.Available, h.Why = false, sessionError(name, sesErr).Error()
	case ses == nil:
		h.Available, h.Why = false, "needs a session: "+level.instead(name)
	case !level.allows(ses.Purpose):
		h.Available, h.Why = false, level.instead(name)
	}
	return h
}

// ActionOut is a result that says what to do next, and nothing else.
type ActionOut struct {
	Action      string `json:"action"`
	Instruction string `json:"instruction"`
}

func logoutTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "logout",
			Description: "End your session when get_next_action says so.",
			Annotations: idempotent,
		},
		level:            Authenticated,
		passesInterrupt:  true,
		passesUnreadable: true,
		takesAck:         true,
		add:              addLogout,
	}
}

// LogoutIn is logout's arguments.
type LogoutIn struct {
	Session
	Acknowledgement
}

func addLogout(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in LogoutIn) (*mcp.CallToolResult, ActionOut, error) {
		ses := sessionFrom(ctx)
		if _, err := s.store.EndSession(ctx, ses.ID, fsstore.EndLogout); err != nil {
			return nil, ActionOut{}, fromStore(err, "session_not_found")
		}
		return nil, ActionOut{Action: "exit", Instruction: "Your session has ended. Exit now."}, nil
	})
}
