package gitstaged

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"aipm/internal/lockedfile"
)

// hookMark ends the line InstallHook writes, which is how it finds the
// line again.
const hookMark = "# aipm: file leases (aipm leases install-hook)"

// InstallHook makes the pre-commit hook of the git work tree holding
// projectDir run the lease check: a line "aipm [--dir DIR] leases check
// --staged --quiet || exit 1" (DIR the project relative to the work
// tree's top, where git runs hooks). The hooks directory is git's own
// (core.hooksPath when set). A missing hook is created; a shell script
// gets the line right after its first line; a hook that has the line
// already is left as it is (changed is false); one whose line is an older
// one has it replaced; a hook in another language is refused
// (ErrForeignHook), unchanged.
func InstallHook(ctx context.Context, projectDir string) (path string, changed bool, err error) {
	top, err := git(ctx, projectDir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", false, err
	}
	top = strings.TrimSpace(top)
	hooks, err := git(ctx, top, "rev-parse", "--git-path", "hooks")
	if err != nil {
		return "", false, err
	}
	if hooks = strings.TrimSpace(hooks); !filepath.IsAbs(hooks) {
		hooks = filepath.Join(top, hooks)
	}
	path = filepath.Join(hooks, "pre-commit")
	line, err := hookLine(top, projectDir)
	if err != nil {
		return path, false, err
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return path, false, fmt.Errorf("install the pre-commit hook: %w", err)
	}
	text, err := withHookLine(string(old), line)
	if err != nil || text == string(old) {
		return path, false, err
	}
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		return path, false, fmt.Errorf("install the pre-commit hook: %w", err)
	}
	target := path
	if linked, err := filepath.EvalSymlinks(path); err == nil {
		target = linked // a hook that is a link (a hook manager's) keeps its link
	}
	// Written beside it and renamed over it: a crash leaves the old hook or
	// the new one, never half of one.
	if err := lockedfile.WriteAtomic(target, []byte(text), 0o755, true, nil); err != nil {
		return path, false, fmt.Errorf("install the pre-commit hook: %w", err)
	}
	return path, true, os.Chmod(target, 0o755)
}

// hookLine is the line of the hook that runs the check for the project
// in projectDir, git running hooks at top.
func hookLine(top, projectDir string) (string, error) {
	root, err := filepath.EvalSymlinks(top)
	if err != nil {
		return "", fmt.Errorf("install the pre-commit hook: %w", err)
	}
	project, err := filepath.EvalSymlinks(projectDir)
	if err != nil {
		return "", fmt.Errorf("install the pre-commit hook: %w", err)
	}
	rel, err := filepath.Rel(root, project)
	if err != nil {
		return "", fmt.Errorf("install the pre-commit hook: %w", err)
	}
	dir := ""
	if rel != "." {
		dir = " --dir '" + strings.ReplaceAll(filepath.ToSlash(rel), "'", `'\''`) + "'"
	}
	return "aipm" + dir + " leases check --staged --quiet || exit 1 " + hookMark, nil
}

// withHookLine is the hook text old with line in it.
func withHookLine(old, line string) (string, error) {
	if old == "" {
		return "#!/bin/sh\n" + line + "\n", nil
	}
	lines := strings.SplitAfter(old, "\n")
	for i, l := range lines {
		if text := strings.TrimRight(l, "\r\n"); strings.HasSuffix(text, hookMark) {
			lines[i] = line + l[len(text):] // its own line ending (CRLF) kept
			return strings.Join(lines, ""), nil
		}
	}
	first := strings.TrimSpace(lines[0])
	if !isShell(first) {
		return "", fmt.Errorf("%w: it starts %q; add this line to it yourself: %s", ErrForeignHook, first, line)
	}
	if !strings.HasSuffix(lines[0], "\n") {
		lines[0] += "\n"
	}
	return lines[0] + line + "\n" + strings.Join(lines[1:], ""), nil
}

// isShell says whether first, a script's first line, runs it with a
// POSIX shell.
func isShell(first string) bool {
	interp, ok := strings.CutPrefix(first, "#!")
	if !ok {
		return false
	}
	for _, word := range strings.Fields(interp) {
		switch filepath.Base(word) {
		case "sh", "bash", "dash", "ksh", "zsh":
			return true
		}
	}
	return false
}
