package hook

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"aipm/fsstore"
	"aipm/fsstore/fsstoretest"
	"aipm/internal/testenv"
)

// On a real case-insensitive file system (as macOS's and Windows's are by
// default), a write in another case of a path another holds exclusively,
// or in another Unicode form, is denied as the leased file's.
func TestPreToolUseLeaseCaseInsensitive(t *testing.T) {
	dir := testenv.CaseInsensitiveDir(t)
	// FUSE's exFAT, which aipm refuses as possibly remote; for the rest of
	// this test process (no test of the hook's looks at the refusal).
	if err := fsstoretest.PretendFilesystem("local"); err != nil {
		t.Fatal(err)
	}
	store, err := fsstore.Init(dir, "hooktest")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, a := range []fsstore.NewAgent{{ID: "lead", Type: fsstore.AgentHuman}, {ID: "coder", Type: fsstore.AgentAI, Parent: "lead"}} {
		if _, err := store.AddAgent(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := store.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	h := &Hook{Store: store, Config: cfg, Agent: "coder"}
	if _, err := store.TakeLease(ctx, cfg, fsstore.LeaseRequest{Holder: "lead", Paths: []string{"src/main.go", "docs/caf\u00e9.md"}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path   string
		denied bool
	}{
		{"src/main.go", true},
		{"SRC/Main.go", true},
		{"Docs/CAFE\u0301.md", true},
		{"src/other.go", false},
	} {
		raw, _ := json.Marshal(map[string]any{"file_path": filepath.Join(dir, filepath.FromSlash(tc.path)), "content": "x"})
		res, err := h.Run(ctx, Input{Event: PreToolUse, ToolName: "Write", ToolInput: raw, Cwd: dir})
		if err != nil {
			t.Fatal(err)
		}
		if denied := strings.Contains(string(res.Stdout), `"permissionDecision":"deny"`); denied != tc.denied {
			t.Errorf("Write %s: printed %q, want denied %v", tc.path, res.Stdout, tc.denied)
		}
	}
}
