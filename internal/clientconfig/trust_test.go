package clientconfig

import (
	"os"
	"path/filepath"
	"testing"
)

// TestGitRoots: the directories both clients look trust up by besides the
// folder: the nearest .git's directory and the main checkout's root, which
// a linked worktree's .git file leads to and a submodule's does not.
func TestGitRoots(t *testing.T) {
	root := t.TempDir()
	mkdir := func(rel string) string {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write := func(rel, data string) {
		if err := os.WriteFile(filepath.Join(root, rel), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	plain := mkdir("plain/app")
	repo := mkdir("repo")
	mkdir("repo/.git/worktrees/feature")
	mkdir("repo/.git/modules/lib")
	sub := mkdir("repo/src/app")
	wt := mkdir("wt")
	write("wt/.git", "gitdir: "+filepath.Join(repo, ".git", "worktrees", "feature")+"\n")
	rel := mkdir("rel/app")
	write("rel/.git", "gitdir: ../repo/.git/worktrees/feature")
	lib := mkdir("repo/lib")
	write("repo/lib/.git", "gitdir: ../.git/modules/lib\n")

	for name, tc := range map[string]struct{ dir, nearest, main string }{
		"outside git":                    {plain, "", ""},
		"a repository's root":            {repo, repo, repo},
		"below a repository's root":      {sub, repo, repo},
		"a linked worktree":              {wt, wt, repo},
		"below a relative linked gitdir": {rel, filepath.Join(root, "rel"), repo},
		"a submodule":                    {lib, lib, ""},
	} {
		t.Run(name, func(t *testing.T) {
			nearest, mainRoot := GitRoots(tc.dir)
			if nearest != tc.nearest || mainRoot != tc.main {
				t.Errorf("GitRoots(%s) = %q, %q; want %q, %q", tc.dir, nearest, mainRoot, tc.nearest, tc.main)
			}
		})
	}
}
