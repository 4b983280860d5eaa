package hook

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"aipm/fsstore"
)

// A file-writing tool call on a path another agent holds exclusively is
// denied, naming the holder, the lease's path and how to ask; the agent's
// own lease, a shared one, a read and a path outside every lease pass in
// silence. The inputs are the clients' documented PreToolUse JSON.
func TestPreToolUseLease(t *testing.T) {
	h := newHook(t) // coder
	ctx := context.Background()
	project := h.Store.ProjectDir()
	if _, err := h.Store.TakeLease(ctx, h.Config, fsstore.LeaseRequest{Holder: "lead", Paths: []string{"src/parser"}, Reason: "rewriting the parser"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Store.TakeLease(ctx, h.Config, fsstore.LeaseRequest{Holder: "lead", Paths: []string{"docs"}, Shared: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Store.TakeLease(ctx, h.Config, fsstore.LeaseRequest{Holder: "coder", Paths: []string{"src/lexer"}}); err != nil {
		t.Fatal(err)
	}
	abs := func(rel string) string { return filepath.Join(project, rel) }
	patch := func(files ...string) map[string]any {
		text := "*** Begin Patch\n"
		for _, f := range files {
			text += "*** Update File: " + f + "\n@@\n-a\n+b\n"
		}
		return map[string]any{"command": text + "*** End Patch\n"}
	}
	for _, tc := range []struct {
		name   string
		tool   string
		input  map[string]any
		denied string // what the refusal names; "" for none
	}{
		{"Edit under another's lease", "Edit", map[string]any{"file_path": abs("src/parser/ast.go"), "old_string": "a", "new_string": "b"}, "lead"},
		{"Write under another's lease", "Write", map[string]any{"file_path": abs("src/parser/new.go"), "content": "package parser"}, "src/parser"},
		{"MultiEdit under another's lease", "MultiEdit", map[string]any{"file_path": abs("src/parser/x.go"), "edits": []any{}}, "rewriting the parser"},
		{"NotebookEdit under another's lease", "NotebookEdit", map[string]any{"notebook_path": abs("src/parser/n.ipynb"), "new_source": "x"}, "send_message"},
		{"apply_patch under another's lease", "apply_patch", patch("src/lexer/l.go", "src/parser/p.go"), "src/parser/p.go"},
		{"own lease", "Edit", map[string]any{"file_path": abs("src/lexer/l.go")}, ""},
		{"shared lease", "Write", map[string]any{"file_path": abs("docs/api.md")}, ""},
		{"no lease", "Write", map[string]any{"file_path": abs("README.md")}, ""},
		{"outside the project", "Write", map[string]any{"file_path": "/tmp/x.go"}, ""},
		{"a read", "Read", map[string]any{"file_path": abs("src/parser/ast.go")}, ""},
		{"apply_patch elsewhere", "apply_patch", patch("src/lexer/l.go"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, _ := json.Marshal(tc.input)
			res, err := h.Run(ctx, Input{Event: PreToolUse, ToolName: tc.tool, ToolInput: raw, Cwd: project})
			if err != nil {
				t.Fatal(err)
			}
			out := string(res.Stdout)
			switch {
			case tc.denied == "" && out != "":
				t.Errorf("printed %s, want nothing", out)
			case tc.denied != "" && (!strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, tc.denied)):
				t.Errorf("printed %q, want a deny naming %q", out, tc.denied)
			}
		})
	}
}
