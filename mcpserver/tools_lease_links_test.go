package mcpserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The lease tool takes a path as the file it is (DESIGN section 18): a
// path named through a symbolic link is leased as where it leads, and
// another agent's take of that spelling conflicts; a path that leads
// through a link out of the project is refused, leasing nothing.
func TestLeaseToolLinks(t *testing.T) {
	p := newProject(t)
	p.taskInProgress("coder", "Rewrite the parser")
	coder, reviewer := p.connect(revisions[0]), p.connect(revisions[0])
	coderToken := p.authenticate(coder, "coder", "task")
	reviewerToken := p.authenticate(reviewer, "reviewer", "chat")
	dir := p.store.ProjectDir()
	if err := os.MkdirAll(filepath.Join(dir, "src", "parser"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"alias": filepath.Join("src", "parser"), "ext": t.TempDir()} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}

	r := call(t, coder, "lease", map[string]any{"session_token": coderToken, "paths": []string{"alias/*.go"}})
	leases, _ := r.data["leases"].([]any)
	if r.isError || len(leases) != 1 {
		t.Fatalf("take through a link: %s", r.text)
	}
	if paths := leases[0].(map[string]any)["paths"].([]any); len(paths) != 1 || paths[0] != "src/parser/*.go" {
		t.Errorf("leased %v, want src/parser/*.go", paths)
	}
	r = call(t, reviewer, "lease", map[string]any{"session_token": reviewerToken, "paths": []string{"src/parser/a.go"}})
	if !r.isError || !strings.HasPrefix(r.text, "lease_conflict") || !strings.Contains(r.text, "as src/parser/*.go") {
		t.Errorf("take of the link's target: %s, want a lease_conflict naming src/parser/*.go", r.text)
	}

	before := p.tree()
	r = call(t, reviewer, "lease", map[string]any{"session_token": reviewerToken, "paths": []string{"ext/x"}})
	if !r.isError || !strings.Contains(r.text, `"ext/x" leads through a symbolic link to`) || !strings.Contains(r.text, "outside the project") {
		t.Errorf("take through a link out of the project: %s, want a refusal saying so", r.text)
	}
	if p.tree() != before {
		t.Error("the refused take changed .ai-pm")
	}
}
