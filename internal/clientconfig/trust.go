package clientconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Most clients read a project's own configuration only in a folder the
// user has trusted, a decision each records in the user's own file.
// aipm doctor, and mcp-config --write after it writes, read those files
// and say, in one sentence with the fix, when a client will ignore aipm's
// entries (each client's trust.go, under internal/clients); these are
// the helpers they share.

// ProjectDirs are the project's absolute directory and, when it differs,
// the same with symbolic links resolved (the one a client started there
// sees as its working directory, and records).
func ProjectDirs(project string) []string {
	abs, err := filepath.Abs(project)
	if err != nil {
		abs = project
	}
	dirs := []string{abs}
	if linked, err := filepath.EvalSymlinks(abs); err == nil && linked != abs {
		dirs = append(dirs, linked)
	}
	return dirs
}

// Resolved is the last of ProjectDirs: the directory with symbolic links
// resolved, the one the clients record trust for.
func Resolved(dirs []string) string { return dirs[len(dirs)-1] }

// GitRoots are what Claude Code and Codex look trust up by besides the
// folder itself: nearest, the closest directory at or above dir that holds a
// .git; and mainRoot, the root of the main checkout: nearest itself, or,
// when nearest's .git is a linked worktree's file (gitdir: <main>/.git/
// worktrees/<name>), the main checkout it belongs to. mainRoot is "" when
// nearest's .git is another kind of file (a submodule's); both are ""
// outside git.
func GitRoots(dir string) (nearest, mainRoot string) {
	for d := dir; ; d = filepath.Dir(d) {
		dotGit := filepath.Join(d, ".git")
		if fi, err := os.Stat(dotGit); err == nil {
			if fi.IsDir() {
				return d, d
			}
			data, err := os.ReadFile(dotGit)
			if err != nil {
				return d, ""
			}
			gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
			if gitdir = strings.TrimSpace(gitdir); !ok || gitdir == "" {
				return d, ""
			}
			if !filepath.IsAbs(gitdir) {
				gitdir = filepath.Join(d, gitdir)
			}
			worktrees := filepath.Dir(gitdir)
			if filepath.Base(worktrees) != "worktrees" {
				return d, ""
			}
			return d, filepath.Dir(filepath.Dir(worktrees))
		}
		if filepath.Dir(d) == d {
			return "", ""
		}
	}
}

// ReadUserFile reads a client's file in the user's home; missing says
// whether it does not exist (which trusts nothing).
func ReadUserFile(path string) (data []byte, missing bool, err error) {
	data, err = os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("%s cannot be read (%v)", path, PathReason(err))
	}
	return data, false, nil
}

// PathReason is err without the paths a *fs.PathError or *os.LinkError
// repeats: "is a directory" rather than "read /home/…/x: is a directory".
func PathReason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
