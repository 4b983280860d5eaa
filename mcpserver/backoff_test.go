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
