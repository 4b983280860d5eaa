package mcpserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"aipm/fsstore"
)

// TestErrorsNameProjectPaths: an error that reaches an MCP client about a
// damaged file of the project names the file once, relative to the
// project, never the home machine's absolute path (a remote agent learns
// nothing of its layout).
func TestErrorsNameProjectPaths(t *testing.T) {
	p := newProject(t)
	task := p.taskInProgress("coder", "Rewrite the parser")
	cs := p.connect("")
	token := p.authenticate(cs, "coder", "task")
	chat := p.authenticate(cs, "reviewer", "chat")
	root := filepath.Join(p.store.ProjectDir(), fsstore.DirName)
	for _, tc := range []struct {
		damage string // made a directory, as a broken hand edit may leave it
		tool   string
		args   map[string]any
	}{
		{"leases/leases.json", "lease", map[string]any{"session_token": token, "paths": []string{"src"}}},
		{"tasks/" + task.ID + ".json", "get_task", map[string]any{"session_token": token, "task_id": task.ID}},
		{"agents/lead/chat.jsonl", "send_message", map[string]any{"session_token": chat, "target_agent_id": "lead", "content": "hello"}},
	} {
		path := filepath.Join(root, tc.damage)
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := os.MkdirAll(path, 0o755); err != nil {
			t.Fatal(err)
		}
		r := call(t, cs, tc.tool, tc.args)
		rel := filepath.Join(fsstore.DirName, tc.damage)
		if !r.isError || strings.Contains(r.text, p.store.ProjectDir()) || strings.Count(r.text, rel) != 1 {
			t.Errorf("%s with %s a directory:\n%s\nwant an error naming %s once, relative to the project", tc.tool, tc.damage, r.text, rel)
		}
	}
}
