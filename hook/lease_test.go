package hook

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	// The project reached through a link, as a client that reports
	// physical paths (or a link inside it) names its files.
	outside := t.TempDir()
	if err := os.Symlink(project, filepath.Join(outside, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(abs("src/parser"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(abs("src/parser"), abs("alias")); err != nil {
		t.Fatal(err)
	}
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
		{"write_file under another's lease (Gemini CLI)", "write_file", map[string]any{"file_path": "src/parser/new.go", "content": "x"}, "lead"},
		{"replace under another's lease (Gemini CLI)", "replace", map[string]any{"file_path": abs("src/parser/ast.go"), "old_string": "a", "new_string": "b"}, "src/parser"},
		{"own lease", "Edit", map[string]any{"file_path": abs("src/lexer/l.go")}, ""},
		{"shared lease", "Write", map[string]any{"file_path": abs("docs/api.md")}, ""},
		{"no lease", "Write", map[string]any{"file_path": abs("README.md")}, ""},
		{"outside the project", "Write", map[string]any{"file_path": "/tmp/x.go"}, ""},
		{"a read", "Read", map[string]any{"file_path": abs("src/parser/ast.go")}, ""},
		{"apply_patch elsewhere", "apply_patch", patch("src/lexer/l.go"), ""},
		{"apply_patch, an indented header", "apply_patch", map[string]any{"command": "*** Begin Patch\r\n  *** Add File: src/parser/q.go\r\n+package parser\r\n*** End Patch\r\n"}, "src/parser/q.go"},
		{"Write through a link into the project", "Write", map[string]any{"file_path": filepath.Join(outside, "link", "src", "parser", "new.go")}, "lead"},
		{"Edit through a link inside the project", "Edit", map[string]any{"file_path": abs("alias/ast.go")}, "src/parser"},
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

// Leases that cannot be read refuse every file write, saying what to
// repair; a tool that writes no file is not held by them.
func TestPreToolUseDamagedLeases(t *testing.T) {
	h := newHook(t)
	if err := os.MkdirAll(filepath.Dir(h.Store.LeasesPath()), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.Store.LeasesPath(), []byte(`{"leases": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	project := h.Store.ProjectDir()
	for _, tc := range []struct {
		tool, input string
		denied      bool
	}{
		{"Write", `{"file_path": "` + filepath.Join(project, "a.go") + `"}`, true},
		{"Read", `{"file_path": "` + filepath.Join(project, "a.go") + `"}`, false},
	} {
		res, err := h.Run(context.Background(), Input{Event: PreToolUse, ToolName: tc.tool, ToolInput: json.RawMessage(tc.input), Cwd: project})
		if err != nil {
			t.Fatal(err)
		}
		out := string(res.Stdout)
		if denied := strings.Contains(out, `"permissionDecision":"deny"`); denied != tc.denied || denied && !strings.Contains(out, "leases.json") {
			t.Errorf("%s: printed %q, want denied %v naming leases.json", tc.tool, out, tc.denied)
		}
	}
}

// A call a lease denies is recorded for the client run aipm launch
// started (Hook.Launch), with the client's id of the call, the holder and
// the path; a client aipm did not start leaves no record.
func TestLeaseDenialRecorded(t *testing.T) {
	h := newHook(t)
	ctx := context.Background()
	if _, err := h.Store.TakeLease(ctx, h.Config, fsstore.LeaseRequest{Holder: "lead", Paths: []string{"src"}}); err != nil {
		t.Fatal(err)
	}
	project := h.Store.ProjectDir()
	in := Input{Event: PreToolUse, ToolName: "Write", ToolUseID: "toolu_01", Cwd: project,
		ToolInput: json.RawMessage(`{"file_path": "` + filepath.Join(project, "src", "x.go") + `"}`)}
	env := Env{Stderr: &strings.Builder{}}
	run := fsstore.NewID(fsstore.PrefixRun)
	for _, launch := range []string{"", run} {
		h.Launch = launch
		res, err := h.Run(ctx, in)
		if err != nil || res.Denied == nil {
			t.Fatalf("launch %q: %+v, %v; want a denial", launch, res, err)
		}
		h.recordDenial(ctx, env, in, res.Denied)
	}
	got, err := h.Store.Runs().TakeDenials("coder", run)
	if err != nil {
		t.Fatal(err)
	}
	want := fsstore.Denial{ToolUseID: "toolu_01", Tool: "Write", Why: fsstore.DeniedLease, Holder: "lead", Path: "src/x.go"}
	if len(got) != 1 || got[0].At.IsZero() {
		t.Fatalf("recorded %+v, want one denial", got)
	}
	if got[0].At = (time.Time{}); got[0] != want {
		t.Errorf("recorded %+v, want %+v", got[0], want)
	}
	if s := env.Stderr.(*strings.Builder).String(); s != "" {
		t.Errorf("stderr %q", s)
	}
}
