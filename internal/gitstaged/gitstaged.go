// Package gitstaged lists what the next git commit of a project would
// change, for the lease check a pre-commit hook runs (aipm leases check
// --staged, DESIGN section 18), in whichever work tree of the repository
// the commit is made (Tree): the main one, a linked worktree, a submodule.
package gitstaged

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// In returns the paths the index of t would change if committed now
// (added, changed or deleted; both names of a rename), relative to project
// (a directory at home: Tree) and slash-separated; paths outside project
// are left out. A submodule whose commit changes (its gitlink) stands for
// the files that change between its two commits, as far as the
// submodule's checkout has them, besides its own path.
func In(ctx context.Context, t Tree, project string) ([]string, error) {
	c := collector{t: t, project: project, seen: map[string]bool{}}
	if err := c.diff(ctx, false, "diff", "--cached"); err != nil {
		return nil, err
	}
	return c.names, nil
}

// Changed returns the paths the working tree of t changes from its last
// commit, as In names them: staged or not, and new files git does not
// ignore, a submodule's own changes among them. A file staged and then
// changed back in the working tree is still listed.
func Changed(ctx context.Context, t Tree, project string) ([]string, error) {
	c := collector{t: t, project: project, seen: map[string]bool{}}
	return c.names, c.changed(ctx)
}

// changed is Changed's listing of c.t.
func (c *collector) changed(ctx context.Context) error {
	if err := c.diff(ctx, false, "diff", "--cached"); err != nil {
		return err
	}
	if err := c.diff(ctx, true, "diff"); err != nil {
		return err
	}
	return c.others(ctx)
}

// others adds the new files of c.t that git does not ignore.
func (c *collector) others(ctx context.Context) error {
	out, err := c.t.git(ctx, c.t.Top, "ls-files", "--others", "--exclude-standard", "--full-name", "-z")
	if err != nil {
		return err
	}
	for _, name := range strings.Split(out, "\x00") {
		c.add(name)
	}
	return nil
}

// A collector gathers the names a listing finds, each once, relative to
// project.
type collector struct {
	t       Tree
	project string
	names   []string
	seen    map[string]bool
	depth   int // how deep in submodules
}

// gitlinkMode is the mode of a submodule's commit in a tree.
const gitlinkMode = "160000"

// diff adds the paths one diff names (git diff --raw -z: ":mode mode sha
// sha status" then the path), a submodule's standing for the files its
// commits change; worktree says the diff compares the index with the work
// tree (the submodule's own changes then count).
func (c *collector) diff(ctx context.Context, worktree bool, args ...string) error {
	out, err := c.t.git(ctx, c.t.Top, append(args, "--raw", "-z", "--no-renames", "--no-abbrev")...)
	if err != nil {
		return err
	}
	fields := strings.Split(out, "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		meta, name := strings.Fields(strings.TrimPrefix(fields[i], ":")), fields[i+1]
		c.add(name)
		if len(meta) >= 4 && (meta[0] == gitlinkMode || meta[1] == gitlinkMode) {
			c.submodule(ctx, name, meta[2], meta[3], worktree)
		}
	}
	return nil
}

// submodule adds the files that change in the submodule at name between
// its commits from and to (all zeros: none, or, for the work tree, its
// checkout as it is), when its checkout is there to ask.
func (c *collector) submodule(ctx context.Context, name, from, to string, worktree bool) {
	dir := filepath.Join(c.t.Top, filepath.FromSlash(name))
	if c.depth >= maxNesting {
		return
	}
	sub, err := TreeOf(ctx, dir, false)
	if err != nil || sub.Top != dir {
		return // not checked out here: its path alone is checked
	}
	inner := collector{t: sub, project: c.project, seen: c.seen, depth: c.depth + 1}
	none := strings.Trim(from, "0") == ""
	switch {
	case worktree && !none:
		if err = inner.diff(ctx, true, "diff", from); err == nil {
			err = inner.others(ctx)
		}
	case worktree:
		err = inner.changed(ctx)
	case none:
		err = inner.tree(ctx, to)
	case strings.Trim(to, "0") == "":
		err = inner.tree(ctx, from)
	default:
		err = inner.diff(ctx, false, "diff", from, to)
	}
	_ = err // a commit the checkout lacks: its path alone is checked
	c.names = append(c.names, inner.names...)
}

// tree adds every file of commit (a submodule added or removed whole).
func (c *collector) tree(ctx context.Context, commit string) error {
	out, err := c.t.git(ctx, c.t.Top, "ls-tree", "-r", "--name-only", "--full-tree", "-z", commit)
	if err != nil {
		return err
	}
	for _, name := range strings.Split(out, "\x00") {
		c.add(name)
	}
	return nil
}

// add adds name, relative to c.t.Top, if it is in the project and new.
func (c *collector) add(name string) {
	if name == "" {
		return
	}
	rel, err := filepath.Rel(c.project, c.t.homeOf(filepath.Join(c.t.Top, filepath.FromSlash(name))))
	if err != nil || rel == "." || !inside(rel) {
		return
	}
	if rel = filepath.ToSlash(rel); !c.seen[rel] {
		c.seen[rel] = true
		c.names = append(c.names, rel)
	}
}

// gitEnv runs git in dir with the environment env (nil: this process's)
// and returns its standard output; its error names what git said.
func gitEnv(ctx context.Context, env []string, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, "not a git repository") {
			return "", fmt.Errorf("%s: %w", dir, ErrNoRepository)
		}
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", args[0], msg)
	}
	return stdout.String(), nil
}
