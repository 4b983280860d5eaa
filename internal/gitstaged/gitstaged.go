// Package gitstaged lists what the next git commit of a project would
// change, for the lease check a pre-commit hook runs (aipm leases check
// --staged, DESIGN section 18).
package gitstaged

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// In returns the paths the index of the git work tree holding projectDir
// would change if committed now (added, changed or deleted; both names of
// a rename), relative to projectDir and slash-separated; paths of the
// repository outside projectDir are left out.
func In(ctx context.Context, projectDir string) ([]string, error) {
	return list(ctx, projectDir, []string{"diff", "--cached", "--name-only", "--no-renames", "-z"})
}

// list returns the paths that the git commands (each printing
// repository-relative names separated by NULs) name, each once, relative
// to projectDir, leaving out those outside it.
func list(ctx context.Context, projectDir string, commands ...[]string) ([]string, error) {
	top, err := git(ctx, projectDir, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, err
	}
	project, err := filepath.EvalSymlinks(projectDir)
	if err != nil {
		return nil, fmt.Errorf("git changed files: %w", err)
	}
	root, err := filepath.EvalSymlinks(strings.TrimSpace(top))
	if err != nil {
		return nil, fmt.Errorf("git changed files: %w", err)
	}
	var names []string
	seen := map[string]bool{}
	for _, args := range commands {
		out, err := git(ctx, root, args...)
		if err != nil {
			return nil, err
		}
		for _, name := range strings.Split(out, "\x00") {
			if name == "" {
				continue
			}
			rel, err := filepath.Rel(project, filepath.Join(root, filepath.FromSlash(name)))
			if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				continue
			}
			if rel = filepath.ToSlash(rel); !seen[rel] {
				seen[rel] = true
				names = append(names, rel)
			}
		}
	}
	return names, nil
}

// git runs git in dir and returns its standard output; its error names
// what git said.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
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
