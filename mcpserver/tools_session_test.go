package mcpserver_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// authenticate refuses a wrong passkey, an unknown or malformed agent, an
// agent with nothing to do and another project, changing nothing; a second
// session of the same purpose replaces the first.
func TestAuthenticate(t *testing.T) {
	p := newProject(t)
	cs := p.connect("")
	before := p.tree()
	for _, tc := range []struct {
		name, agent, passkey, code string
	}{
		{"wrong passkey", "coder", "aipk_wrong", "authentication_failed"},
		{"unknown agent", "ghost", "x", "agent_not_found"},
		{"malformed agent", "../etc", "x", "authentication_failed"},
		{"nothing to do", "coder", p.passkeys["coder"], "nothing_to_do"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, cs, "authenticate", map[string]any{"agent_id": tc.agent, "passkey": tc.passkey})
			if r.code() != tc.code {
				t.Fatalf("got %q, want code %s", r.text, tc.code)
			}
		})
	}
	if p.tree() != before {
		t.Error("a refused authenticate changed .ai-pm")
	}
	r := call(t, cs, "authenticate", map[string]any{"agent_id": "coder", "passkey": p.passkeys["coder"], "project_id": "prj_other"})
	if !r.isError || !strings.Contains(r.text, "wrong project") {
		t.Errorf("wrong project_id: %s", r.text)
	}

	// One live session per agent and purpose: a second authenticate replaces the first.
	first := p.authenticate(cs, "coder", "chat")
	second := p.authenticate(cs, "coder", "chat")
	if r := call(t, cs, "get_notifications", map[string]any{"session_token": first}); r.code() != "session_ended" || !strings.Contains(r.text, "replaced") {
		t.Errorf("old session: %s", r.text)
	}
	if r := call(t, cs, "get_notifications", map[string]any{"session_token": second}); r.isError {
		t.Errorf("new session: %s", r.text)
	}
	live, _ := p.store.LiveSessions(time.Now())
	if len(live) != 1 {
		t.Errorf("%d live sessions, want 1", len(live))
	}
}

// Wrong passkeys are counted across processes: after a few, every
// authenticate for that agent, through any aipm serve, is refused with the
// time to retry, the right passkey too, without being checked; once the
// wait is over a success clears the count. Other agents are not slowed.
func TestAuthenticateBackoff(t *testing.T) {
	p := newProject(t)
	p.taskInProgress("coder", "back-off")
	a, b := p.connect(""), p.connect("")
	wrong := map[string]any{"agent_id": "coder", "passkey": "aipk_wrong"}
	right := map[string]any{"agent_id": "coder", "passkey": p.passkeys["coder"]}
	for i := range 4 { // the free failures, then the first that starts a wait
		if r := call(t, []*mcp.ClientSession{a, b}[i%2], "authenticate", wrong); r.code() != "authentication_failed" {
			t.Fatalf("wrong passkey %d: %s", i+1, r.text)
		}
	}
	for name, cs := range map[string]*mcp.ClientSession{"a": a, "b": b} {
		r := call(t, cs, "authenticate", right)
		if r.code() != "authentication_backoff" || !strings.Contains(r.text, "4 failed authenticates") || !strings.Contains(r.text, "try again after") {
			t.Errorf("server %s during the back-off: %s", name, r.text)
		}
	}
	if r := call(t, b, "authenticate", map[string]any{"agent_id": "reviewer", "passkey": p.passkeys["reviewer"]}); r.code() == "authentication_backoff" {
		t.Errorf("another agent was slowed: %s", r.text)
	}

	// The wait is over (as if time had passed): the right passkey works and
	// clears the count.
	path := filepath.Join(p.store.Root(), "agents", "coder", "auth.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]any
	json.Unmarshal(data, &f)
	if f["failures"] != float64(4) {
		t.Fatalf("auth.json = %s", data)
	}
	f["notBefore"] = time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano)
	data, _ = json.Marshal(f)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := call(t, a, "authenticate", right); r.isError {
		t.Fatalf("after the wait: %s", r.text)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a success left the failure count: %v", err)
	}
}
