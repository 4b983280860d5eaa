package gitstaged

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A Tree is one git work tree whose changes a check lists: Top, where git
// runs its hooks, and Home, where Top is in the project's one tree of
// files, the main work tree of the outermost repository. A linked worktree
// (git worktree add, inside the project or not) is at home in its main
// work tree's top; a submodule at its path in its superproject's home. A
// project's .ai-pm, and the paths its leases name, are at home: a change
// in any tree of the repository is checked as the change of the file at
// home it stands for.
type Tree struct {
	Top, Home string
	// inherit: git's environment (GIT_DIR, which git sets for the hook
	// of a linked worktree; GIT_INDEX_FILE) is Top's repository's, and
	// its commands run with it; every other repository's run without.
	inherit bool
}

// maxNesting bounds how deep submodules nest (a loop of links cannot
// send the search round for ever).
const maxNesting = 16

// TreeOf is the work tree that holds dir. here says dir is where git runs
// the hook that checks it (the working directory), so that git's
// environment (GIT_DIR, GIT_INDEX_FILE) names this tree's repository and
// index: a commit's own index, git commit -a's included.
func TreeOf(ctx context.Context, dir string, here bool) (Tree, error) {
	return treeOf(ctx, dir, here, 0)
}

func treeOf(ctx context.Context, dir string, here bool, depth int) (Tree, error) {
	if depth > maxNesting {
		return Tree{}, fmt.Errorf("%s: submodules nest more than %d deep", dir, maxNesting)
	}
	t := Tree{inherit: here}
	out, err := t.git(ctx, dir, "rev-parse", "--show-toplevel", "--show-superproject-working-tree")
	if err != nil {
		return Tree{}, err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if t.Top, err = resolve(lines[0]); err != nil {
		return Tree{}, err
	}
	t.Home = t.Top
	if len(lines) > 1 && lines[1] != "" {
		super, err := treeOf(ctx, lines[1], false, depth+1)
		if err != nil {
			return Tree{}, err
		}
		t.Home = super.homeOf(t.Top)
		return t, nil
	}
	main, err := t.mainWorktree(ctx)
	if err != nil {
		return Tree{}, err
	}
	if main != "" {
		t.Home = main
	}
	return t, nil
}

// Home is where dir, in some work tree of a repository, is at home
// (Tree): the directory a project in dir has its .ai-pm in.
func Home(ctx context.Context, dir string) (string, error) {
	t, err := TreeOf(ctx, dir, false)
	if err != nil {
		return "", err
	}
	d, err := resolve(dir)
	if err != nil {
		return "", err
	}
	return t.homeOf(d), nil
}

// homeOf is where path, under t.Top, is at home.
func (t Tree) homeOf(path string) string {
	rel, err := filepath.Rel(t.Top, path)
	if err != nil || !inside(rel) {
		return path
	}
	return filepath.Join(t.Home, rel)
}

// Overlaps says whether the tree's files and dir's (at home) meet: one of
// the two holds the other.
func (t Tree) Overlaps(dir string) bool {
	return within(t.Home, dir) || within(dir, t.Home)
}

// within says whether path is dir or under it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && inside(rel)
}

// inside says whether rel, a relative path, stays where it starts.
func inside(rel string) bool {
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// mainWorktree is the main work tree of t's repository when Top is one
// of its linked worktrees ("" when Top is the main one, or the repository
// is bare).
func (t Tree) mainWorktree(ctx context.Context) (string, error) {
	out, err := t.git(ctx, t.Top, "worktree", "list", "--porcelain")
	if err != nil {
		return "", err
	}
	block, _, _ := strings.Cut(out, "\n\n")
	lines := strings.Split(block, "\n")
	path, ok := strings.CutPrefix(lines[0], "worktree ")
	if !ok || slices.Contains(lines, "bare") {
		return "", nil
	}
	main, err := resolve(path)
	if err != nil || main == t.Top {
		return "", nil // gone (git worktree prune has not run), or this one
	}
	return main, nil
}

// resolve is path absolute, its symbolic links resolved.
func resolve(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("git work tree: %w", err)
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return "", fmt.Errorf("git work tree: %w", err)
	}
	return abs, nil
}

// repoEnv are the variables that name a repository, its index or its work
// tree (git rev-parse --local-env-vars): a command on another repository
// than the one of the hook runs without them.
var repoEnv = []string{"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
	"GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE", "GIT_INDEX_FILE",
	"GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX", "GIT_SHALLOW_FILE", "GIT_COMMON_DIR"}

// env is the environment of t's git commands: this process's, without
// repoEnv unless it names t's repository.
func (t Tree) env() []string {
	if t.inherit {
		return nil
	}
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(repoEnv, k) || strings.HasPrefix(k, "GIT_CONFIG_KEY_") || strings.HasPrefix(k, "GIT_CONFIG_VALUE_")
	})
}

// git runs git in dir with t's environment.
func (t Tree) git(ctx context.Context, dir string, args ...string) (string, error) {
	return gitEnv(ctx, t.env(), dir, args...)
}
