package gitstaged

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"aipm/internal/lockedfile"
)

// hookMark ends the line InstallHook writes, which is how it finds the
// line again.
const hookMark = "# aipm: file leases (aipm leases install-hook)"

// guardKey is the repository's git config key that says install-hook
// guards the project's commits: what GuardProblems holds the hooks to.
const guardKey = "aipm.leasesGuard"

// A Hook is one pre-commit hook InstallHook wrote, or would have.
type Hook struct {
	Path    string // the hook's file
	Where   string // whose commits it checks: "" the project's work tree, else "submodule DIR" or "worktree DIR"
	Changed bool   // written (false: it had the line already)
	Err     error  // why it was not (ErrForeignHook: the line to add is in it)
}

// InstallHook makes the pre-commit hook of each work tree whose commits
// change the files of project (a directory at home: Tree) run the lease
// check: the work tree holding it, its linked worktrees when git runs
// another hook for them (a relative core.hooksPath), and the submodules
// checked out in any of them (recursively). It writes a line "aipm [--dir
// DIR] leases check --staged --quiet || exit 1" (DIR the project relative
// to the tree's top, where git runs hooks) in the hooks directory git uses
// (core.hooksPath when set). A missing hook is created; a shell script
// gets the line right after its first line; a hook that has the line
// already is left as it is (Changed false); one whose line is an older one
// has it replaced; a hook in another language is refused (ErrForeignHook),
// unchanged, and so is one that two trees would need different lines in
// (a core.hooksPath they share). It then records, in the repository's
// config, that the project is guarded (GuardProblems). A submodule or a
// worktree made since has no hook: run it again.
func InstallHook(ctx context.Context, project string) ([]Hook, error) {
	main, err := TreeOf(ctx, project, false)
	if err != nil {
		return nil, err
	}
	trees, err := projectTrees(ctx, main, project)
	if err != nil {
		return nil, err
	}
	var hooks []Hook
	lines := map[string]string{} // hook path -> the line written in it
	for _, t := range trees {
		path, line, err := hookOf(ctx, t, project)
		if err == nil && lines[path] == line {
			continue // a hook another tree shares, written already
		}
		h := Hook{Path: path, Where: t.where(main, project), Err: err}
		switch other, ok := lines[path]; {
		case err != nil:
		case ok && other != line:
			h.Err = fmt.Errorf("it is the hook of another work tree too (a core.hooksPath they share), which needs another line: give this tree a hooks directory of its own, or add this line where it runs: %s", line)
		default:
			lines[path] = line
			h.Changed, h.Err = writeHookLine(path, line)
		}
		hooks = append(hooks, h)
	}
	if _, err := main.git(ctx, main.Top, "config", "--local", guardKey, "true"); err != nil {
		return hooks, fmt.Errorf("record that the leases are guarded: %w", err)
	}
	return hooks, nil
}

// where says whose commits t's hook checks, for a Hook.
func (t Tree) where(main Tree, project string) string {
	switch {
	case t.Top == main.Top:
		return ""
	case t.Home == main.Home:
		return "worktree " + t.Top
	}
	return "submodule " + relTo(project, t.Home)
}

// projectTrees are the work trees whose commits change project's files:
// main (the one holding it), its repository's linked worktrees, and the
// submodules checked out in any of them whose files are the project's.
func projectTrees(ctx context.Context, main Tree, project string) ([]Tree, error) {
	worktrees := []Tree{main}
	out, err := main.git(ctx, main.Top, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, err
	}
	for _, block := range strings.Split(out, "\n\n") {
		lines := strings.Split(block, "\n")
		path, ok := strings.CutPrefix(lines[0], "worktree ")
		if !ok || slices.Contains(lines, "bare") || slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "prunable") }) {
			continue
		}
		if t, err := TreeOf(ctx, path, false); err == nil && t.Top != main.Top && t.Home == main.Home {
			worktrees = append(worktrees, t)
		}
	}
	var trees []Tree
	for _, w := range worktrees {
		trees = append(trees, w)
		out, err := w.git(ctx, w.Top, "submodule", "foreach", "--quiet", "--recursive", "pwd")
		if err != nil {
			return nil, err
		}
		for _, dir := range strings.Split(strings.TrimSpace(out), "\n") {
			if dir == "" {
				continue
			}
			t, err := TreeOf(ctx, dir, false)
			if err != nil {
				return nil, err
			}
			if within(t.Home, project) {
				trees = append(trees, t)
			}
		}
	}
	return trees, nil
}

// relTo is path relative to dir, slash-separated; "" for dir itself.
func relTo(dir, path string) string {
	rel, err := filepath.Rel(dir, path)
	if err != nil || rel == "." {
		return ""
	}
	return filepath.ToSlash(rel)
}

// hookOf is the pre-commit hook git runs for t's commits, and the line
// that checks them against project's leases.
func hookOf(ctx context.Context, t Tree, project string) (path, line string, err error) {
	hooks, err := t.git(ctx, t.Top, "rev-parse", "--git-path", "hooks")
	if err != nil {
		return "", "", err
	}
	if hooks = strings.TrimSpace(hooks); !filepath.IsAbs(hooks) {
		hooks = filepath.Join(t.Top, hooks)
	}
	rel, err := filepath.Rel(t.Home, project)
	if err != nil {
		return "", "", fmt.Errorf("install the pre-commit hook: %w", err)
	}
	return filepath.Join(hooks, "pre-commit"), hookLine(rel), nil
}

// writeHookLine puts line in the hook at path (withHookLine).
func writeHookLine(path, line string) (changed bool, err error) {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("install the pre-commit hook: %w", err)
	}
	text, err := withHookLine(string(old), line)
	if err != nil {
		return false, err
	}
	if text == string(old) {
		// There already; one git skips (not executable) is made to run.
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm()&0o111 == 0o111 {
			return false, err
		}
		return true, os.Chmod(path, fi.Mode().Perm()|0o111)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, fmt.Errorf("install the pre-commit hook: %w", err)
	}
	target := path
	if linked, err := filepath.EvalSymlinks(path); err == nil {
		target = linked // a hook that is a link (a hook manager's) keeps its link
	}
	// Written beside it and renamed over it: a crash leaves the old hook or
	// the new one, never half of one.
	if err := lockedfile.WriteAtomic(target, []byte(text), 0o755, true, nil); err != nil {
		return false, fmt.Errorf("install the pre-commit hook: %w", err)
	}
	return true, os.Chmod(target, 0o755)
}

// hookLine is the line of a hook that runs the check for the project at
// rel from where git runs it.
func hookLine(rel string) string {
	dir := ""
	if rel != "." {
		dir = " --dir '" + strings.ReplaceAll(filepath.ToSlash(rel), "'", `'\''`) + "'"
	}
	return "aipm" + dir + " leases check --staged --quiet || exit 1 " + hookMark
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
