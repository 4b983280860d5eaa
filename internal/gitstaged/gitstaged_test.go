package gitstaged

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"aipm/internal/testenv"
)

// The staged paths of a project in a subdirectory of its repository:
// added, changed, deleted and both names of a rename, relative to the
// project; unstaged changes and paths outside the project are not listed.
// The changed paths: those, the unstaged changes and the new files.
func TestIn(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		testenv.SkipMissing(t, "git")
	}
	ctx := context.Background()
	repo := t.TempDir()
	project := filepath.Join(repo, "proj")
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(repo, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run("init", "-q")
	write("proj/src/a.go", "a")
	write("proj/src/b.go", "b")
	write("proj/old.go", "old")
	write("other/x.go", "x")
	run("add", ".")
	run("commit", "-q", "-m", "first")

	write("proj/src/a.go", "a2")  // changed, staged
	write("proj/src/new.go", "n") // added, staged
	write("proj/src/b.go", "b2")  // changed, not staged
	write("other/x.go", "x2")     // outside the project
	run("add", "proj/src/a.go", "proj/src/new.go", "other/x.go")
	run("mv", "proj/old.go", "proj/renamed.go")
	home, err := Home(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := TreeOf(ctx, project, false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := In(ctx, tree, home)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := []string{"old.go", "renamed.go", "src/a.go", "src/new.go"}
	if !slices.Equal(got, want) {
		t.Errorf("In = %v, want %v", got, want)
	}

	// Changed: staged or not, and new files git does not ignore.
	write("proj/src/untracked.go", "u")
	write("proj/.gitignore", "*.log\n")
	write("proj/debug.log", "ignored")
	got, err = Changed(ctx, tree, home)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want = []string{".gitignore", "old.go", "renamed.go", "src/a.go", "src/b.go", "src/new.go", "src/untracked.go"}
	if !slices.Equal(got, want) {
		t.Errorf("Changed = %v, want %v", got, want)
	}

	if _, err := TreeOf(ctx, t.TempDir(), false); !errors.Is(err, ErrNoRepository) {
		t.Errorf("outside a repository: %v, want ErrNoRepository", err)
	}
}
