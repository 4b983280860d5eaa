package mcpserver_test

import (
	"aipm/fsstore"
	"os"
	"testing"
)

// TestServeKeepsConfigWhileSaved: while config.toml is being saved in place
// (truncated, then written), a running aipm serve keeps the config it has:
// its agent's sends go through in the empty moment and after.
func TestServeKeepsConfigWhileSaved(t *testing.T) {
	p := newProject(t)
	cs := p.connect("")
	p.send("reviewer", "coder", "hello")
	token := p.authenticate(cs, "coder", fsstore.PurposeChat)
	path := p.store.ConfigPath()
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := os.Truncate(path, 0); err != nil {
			t.Fatal(err)
		}
		r := call(t, cs, "send_message", map[string]any{"session_token": token, "target_agent_id": "reviewer", "content": "still here"})
		if r.isError {
			t.Fatalf("save %d: send_message while config.toml is empty: %s", i, r.text)
		}
		if err := os.WriteFile(path, good, 0o644); err != nil {
			t.Fatal(err)
		}
		if r := call(t, cs, "send_message", map[string]any{"session_token": token, "target_agent_id": "reviewer", "content": "and now"}); r.isError {
			t.Fatalf("save %d: send_message after the save: %s", i, r.text)
		}
	}
}
