package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// revisions are the protocol revisions the real clients speak: Codex
// (2025-06-18), the TypeScript SDK (2025-11-25), Claude Code (2026-07-28).
var revisions = []string{"2025-06-18", "2025-11-25", "2026-07-28"}

// errorText is how every aipm error result starts: a code, or the
// interrupt notice.
var errorText = regexp.MustCompile(`^([a-z][a-z_]+: |INTERRUPT \()`)

// resultChecker validates every tools/call result the way a strict client
// of its protocol revision does (the TypeScript SDK v2, Claude Code, the
// Inspector): the go-sdk client itself checks neither resultType nor
// structured content, so the test adds the checks as client middleware.
type resultChecker struct {
	t        *testing.T
	revision string

	mu      sync.Mutex
	schemas map[string]*jsonschema.Resolved // output schema by tool name
	seen    map[string]bool                 // error codes seen
}

func newResultChecker(t *testing.T, revision string) *resultChecker {
	return &resultChecker{t: t, revision: revision, seen: map[string]bool{}}
}

// client is an SDK client whose every tools/call result is checked.
func (rc *resultChecker) client() *mcp.Client {
	c := mcp.NewClient(&mcp.Implementation{Name: "aipm-strict", Version: "1"}, nil)
	c.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if r, ok := res.(*mcp.CallToolResult); ok && err == nil {
				name := "?"
				if p, ok := req.GetParams().(*mcp.CallToolParams); ok {
					name = p.Name
				}
				rc.check(name, r)
			}
			return res, err
		}
	})
	return c
}

// learn resolves the output schemas the server lists.
func (rc *resultChecker) learn(cs *mcp.ClientSession) {
	rc.t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		rc.t.Fatal(err)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.schemas = map[string]*jsonschema.Resolved{}
	for _, tool := range res.Tools {
		if tool.OutputSchema == nil {
			continue
		}
		raw, _ := json.Marshal(tool.OutputSchema)
		var s jsonschema.Schema
		if err := json.Unmarshal(raw, &s); err != nil {
			rc.t.Fatalf("%s: output schema: %v", tool.Name, err)
		}
		resolved, err := s.Resolve(nil)
		if err != nil {
			rc.t.Fatalf("%s: output schema: %v", tool.Name, err)
		}
		rc.schemas[tool.Name] = resolved
	}
}

func (rc *resultChecker) check(tool string, r *mcp.CallToolResult) {
	raw, err := json.Marshal(r)
	if err != nil {
		rc.t.Errorf("%s: result does not encode: %v", tool, err)
		return
	}
	var wire struct {
		Content    *[]json.RawMessage `json:"content"`
		ResultType *string            `json:"resultType"`
	}
	json.Unmarshal(raw, &wire)
	if wire.Content == nil {
		rc.t.Errorf("%s [%s]: content is missing or null: %s", tool, rc.revision, raw)
	}
	if rc.revision >= "2026-07-28" && (wire.ResultType == nil || *wire.ResultType != "complete") {
		rc.t.Errorf("%s [%s]: INVALID_RESULT: missing required resultType: %s", tool, rc.revision, raw)
	}
	text := ""
	if len(r.Content) > 0 {
		if tc, ok := r.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	if r.IsError {
		if !errorText.MatchString(text) {
			rc.t.Errorf("%s [%s]: error text does not start with a code: %q", tool, rc.revision, text)
		}
		code, _, _ := strings.Cut(text, ":")
		code, _, _ = strings.Cut(code, " ")
		rc.mu.Lock()
		rc.seen[code] = true
		rc.mu.Unlock()
		return
	}
	rc.mu.Lock()
	schema := rc.schemas[tool]
	rc.mu.Unlock()
	if schema == nil {
		return
	}
	if r.StructuredContent == nil {
		rc.t.Errorf("%s [%s]: tool has an output schema but the result has no structured content", tool, rc.revision)
		return
	}
	data, _ := json.Marshal(r.StructuredContent)
	var v any
	json.Unmarshal(data, &v)
	if err := schema.Validate(v); err != nil {
		rc.t.Errorf("%s [%s]: structured content does not match the output schema: %v\n%s", tool, rc.revision, err, data)
	}
}

// Every refusal the gate builds, the interrupt notice and a tool's own
// results, at each protocol revision, through the SDK's client over stdio
// to the built binary, each result checked as a strict client would.
func TestResultsValidAtEveryRevision(t *testing.T) {
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			p := newProject(t)
			task := p.taskInProgress("coder", "valid results")
			p.taskInProgress("reviewer", "a task session to expire")
			rc := newResultChecker(t, rev)
			cs := p.connectClient(rc.client(), rev, nil, os.Stderr)
			if got := cs.InitializeResult().ProtocolVersion; got != rev {
				t.Fatalf("negotiated %s, want %s", got, rev)
			}
			rc.learn(cs)

			// authenticate removes ended and expired sessions: end and age last
			token := p.authenticate(cs, "coder", "task")
			chat := p.authenticate(cs, "reviewer", "chat")
			ended := p.authenticate(cs, "coder", "chat")
			expired := p.authenticate(cs, "reviewer", "task")
			call(t, cs, "logout", map[string]any{"session_token": ended})
			ageSession(t, p, expired)

			for _, tc := range []struct {
				tool string
				args map[string]any
				code string
			}{
				{"no_such_tool", map[string]any{}, "unknown_tool"},
				{"get_task", map[string]any{"task_id": task.ID}, "session_required"},
				{"get_task", map[string]any{"session_token": "garbage", "task_id": task.ID}, "invalid_session"},
				{"get_task", map[string]any{"session_token": expired, "task_id": task.ID}, "session_expired"},
				{"get_task", map[string]any{"session_token": ended, "task_id": task.ID}, "session_ended"},
				{"send_message", map[string]any{"session_token": token, "target_agent_id": "reviewer", "content": "hi"}, "wrong_session_purpose"},
				{"send_message", map[string]any{"session_token": chat, "target_agent_id": "coder"}, "invalid_arguments"},
				{"get_task", map[string]any{"session_token": token, "task_id": "tsk_01M7YZWACRA0328GMTHNDHB18Z"}, "task_not_found"},
				{"authenticate", map[string]any{"agent_id": "coder", "passkey": "wrong"}, "authentication_failed"},
				{"get_task", map[string]any{"session_token": token, "task_id": task.ID}, ""},
				{"get_task", map[string]any{"session_token": token}, ""},
				{"list_tasks", map[string]any{"session_token": token}, ""},
				{"help", map[string]any{"session_token": token}, ""},
				{"get_next_action", map[string]any{"session_token": token}, ""},
				{"send_message", map[string]any{"session_token": chat, "target_agent_id": "coder", "content": "hi"}, ""},
				{"get_pending_messages", map[string]any{"session_token": chat}, ""},
			} {
				r := call(t, cs, tc.tool, tc.args)
				if r.code() != tc.code {
					t.Errorf("%s %v: got %q, want code %q", tc.tool, tc.args, r.text, tc.code)
				}
			}

			// A lone surrogate escape is refused before any decoding, as
			// invalid UTF-8 is (no SDK client can send the raw bytes).
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_task",
				Arguments: json.RawMessage(`{"session_token":"` + token + `","task_id":"tsk_\ud800"}`)})
			if err != nil || !res.IsError || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "content_invalid: ") {
				t.Errorf("lone surrogate: %v %+v", err, res)
			}

			// The interrupt notice replaces the response of a gated tool.
			interrupt(t, p, task.ID)
			r := call(t, cs, "get_task", map[string]any{"session_token": token})
			if !r.isError || !strings.HasPrefix(r.text, "INTERRUPT (get_task did not run)") {
				t.Errorf("after the interrupt: %q", r.text)
			}
			for _, tool := range []string{"get_notifications", "report_completed"} {
				args := map[string]any{"session_token": token, "result": "blocked", "summary": "stopped"}
				if tool == "get_notifications" {
					args = map[string]any{"session_token": token, "mark_as_read": false}
				}
				if r := call(t, cs, tool, args); r.isError {
					t.Errorf("%s during the interrupt: %q", tool, r.text)
				}
			}
			if !rc.seen["INTERRUPT"] {
				t.Error("the checker never saw the interrupt notice")
			}
		})
	}
}

// interrupt blocks a task in progress as a human would, which interrupts
// its assignee's task session.
func interrupt(t *testing.T, p *project, id string) {
	t.Helper()
	if _, err := p.store.UpdateTask(context.Background(), p.cfg, id, "lead", fsstore.TaskChange{Status: fsstore.StatusBlocked, Reason: "requirements changed"}); err != nil {
		t.Fatal(err)
	}
}

// Every tool's structured content carries the notification line, with none
// and with some unread, because Claude Code and Codex show the model only
// the structured content of a successful result.
func TestNotificationLineInStructuredContent(t *testing.T) {
	p := newProject(t)
	task := p.taskInProgress("coder", "notification line")
	cs := p.connect("")
	token := p.authenticate(cs, "coder", "task")
	chat := p.authenticate(cs, "reviewer", "chat")
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"get_next_action", map[string]any{"session_token": token}},
		{"get_task", map[string]any{"session_token": token}},
		{"get_task", map[string]any{"session_token": token, "task_id": task.ID}},
		{"list_tasks", map[string]any{"session_token": token}},
		{"get_notifications", map[string]any{"session_token": token, "mark_as_read": false}},
		{"update_task_status", map[string]any{"session_token": token, "status": "in_progress"}},
		{"get_pending_messages", map[string]any{"session_token": chat}},
		{"send_message", map[string]any{"session_token": chat, "target_agent_id": "coder", "content": "hi"}},
		{"respond_chat", map[string]any{"session_token": chat, "content": "hi"}},
	}
	// check calls every tool; once is the line of a session's first
	// response after the notifications came and of get_notifications (it
	// shows them), again the line of the session's later responses (the
	// notifications were told: DESIGN section 15).
	check := func(once, again string) {
		t.Helper()
		told := map[any]bool{}
		for _, c := range calls {
			want := once
			if key := c.args["session_token"]; key != nil && told[key] && c.tool != "get_notifications" {
				want = again
			} else if key != nil {
				told[key] = true
			}
			if c.tool == "authenticate" {
				if err := p.store.Triggers().Write(context.Background(), fsstore.Trigger{Agent: "coder", Purpose: "chat", Reason: "test"}); err != nil {
					t.Fatal(err)
				}
			}
			r := call(t, cs, c.tool, c.args)
			if c.tool == "update_task_status" || c.tool == "respond_chat" {
				// refused (already in progress; nothing to answer): the
				// line rides in the error text
				if !r.isError || !strings.Contains(r.text, want) {
					t.Errorf("%s: error text lacks %q: %q", c.tool, want, r.text)
				}
				continue
			}
			if r.isError {
				t.Fatalf("%s: %s", c.tool, r.text)
			}
			if got := r.str("notification"); got != want {
				t.Errorf("%s: structured notification = %q, want %q", c.tool, got, want)
			}
			if !strings.Contains(r.text, want) {
				t.Errorf("%s: text lacks %q", c.tool, want)
			}
		}
	}
	check("notifications: none", "notifications: none")
	// authenticate (a chat session for coder, replaced each time) and help
	// carry it too, once there is a session
	calls = append(calls,
		struct {
			tool string
			args map[string]any
		}{"authenticate", map[string]any{"agent_id": "coder", "passkey": p.passkeys["coder"], "purpose": "chat"}},
		struct {
			tool string
			args map[string]any
		}{"help", map[string]any{"session_token": chat}},
	)
	check("notifications: none", "notifications: none")
	for range 3 {
		if _, err := p.store.Notify(context.Background(), "coder", fsstore.Notification{Message: "look"}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.store.Notify(context.Background(), "reviewer", fsstore.Notification{Message: "look"}); err != nil {
			t.Fatal(err)
		}
	}
	check("notifications: you have 3 notifications: call get_notifications", "notifications: none new (3 unread, told before)")
}
