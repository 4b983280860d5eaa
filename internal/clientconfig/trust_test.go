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
			nearest, mainRoot := gitRoots(tc.dir)
			if nearest != tc.nearest || mainRoot != tc.main {
				t.Errorf("gitRoots(%s) = %q, %q; want %q, %q", tc.dir, nearest, mainRoot, tc.nearest, tc.main)
			}
		})
	}

	// Codex: the folder, then the .git's directory, then the main
	// checkout; the first entry decides, and no other parent counts.
	cfg := &codexUserConfig{Projects: map[string]struct {
		TrustLevel string `toml:"trust_level"`
	}{root: {"trusted"}, repo: {"trusted"}}}
	for dir, want := range map[string]string{plain: "", sub: "trusted", wt: "trusted"} {
		if got, _ := cfg.trust([]string{dir}); got != want {
			t.Errorf("Codex trust of %s = %q, want %q", dir, got, want)
		}
	}
	cfg.Projects[wt] = struct {
		TrustLevel string `toml:"trust_level"`
	}{"untrusted"}
	if got, key := cfg.trust([]string{wt}); got != "untrusted" || key != wt {
		t.Errorf("Codex trust of %s = %q under %q, want its own entry, untrusted", wt, got, key)
	}
	if got := codexTrustKey(wt); got != repo {
		t.Errorf("Codex records trust for %s under %q, want the main checkout %q", wt, got, repo)
	}
	if got := claudeTrustKey(sub); got != repo {
		t.Errorf("Claude Code saves trust for %s under %q, want the repository's root %q", sub, got, repo)
	}
}
