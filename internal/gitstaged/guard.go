package gitstaged

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// GuardProblems says, once InstallHook guarded the project, of each
// pre-commit hook git would now run for a commit of the project's files
// without the lease check: the hook of each of InstallHook's trees,
// missing, not executable (git skips it) or without a line that
// runs aipm leases check, as when core.hooksPath is set, changed or unset
// after install-hook, or a submodule is checked out since. Never guarded:
// none.
func GuardProblems(ctx context.Context, project string) ([]string, error) {
	project, err := Home(ctx, project)
	if err != nil {
		return nil, err
	}
	main, err := TreeOf(ctx, project, false)
	if err != nil || !guarded(ctx, main) {
		return nil, err
	}
	trees, err := projectTrees(ctx, main, project)
	if err != nil {
		return nil, err
	}
	var problems []string
	seen := map[string]bool{}
	for _, t := range trees {
		path, problem := unguarded(ctx, t)
		if !seen[path] && problem != "" {
			problems = append(problems, problem)
		}
		seen[path] = true
	}
	return problems, nil
}

// GuardProblem is GuardProblems for the one work tree t: "" when the
// project was never guarded or t's hook runs the check.
func GuardProblem(ctx context.Context, project string, t Tree) string {
	main, err := TreeOf(ctx, project, false)
	if err != nil || !guarded(ctx, main) {
		return ""
	}
	_, problem := unguarded(ctx, t)
	return problem
}

// guarded says whether install-hook guarded main's repository.
func guarded(ctx context.Context, main Tree) bool {
	out, err := main.git(ctx, main.Top, "config", "--local", "--get", guardKey)
	return err == nil && strings.TrimSpace(out) == "true"
}

// unguarded is the pre-commit hook git runs for t's commits, and what
// keeps it from checking them ("": nothing).
func unguarded(ctx context.Context, t Tree) (path, problem string) {
	path, _, err := hookOf(ctx, t, t.Home)
	if err != nil {
		return "", ""
	}
	hooksPath, _ := t.git(ctx, t.Top, "config", "--get", "core.hooksPath")
	why := ""
	switch fi, err := os.Stat(path); {
	case err != nil:
		why = "there is none"
	case fi.Mode().Perm()&0o111 == 0:
		why = "it is not executable, so git skips it"
	default:
		data, err := os.ReadFile(path)
		if err != nil {
			why = fmt.Sprintf("it cannot be read (%v)", err)
		} else if !strings.Contains(string(data), "leases check") {
			why = "it does not run aipm leases check"
		}
	}
	if why == "" {
		return path, ""
	}
	where := "core.hooksPath is unset"
	if hp := strings.TrimSpace(hooksPath); hp != "" {
		where = fmt.Sprintf("core.hooksPath is %q", hp)
	}
	return path, fmt.Sprintf("git runs %s before a commit in %s (%s), and %s: those commits are not checked against the file leases, which aipm leases install-hook guarded; run aipm leases install-hook again, or add its line to that hook",
		path, t.Top, where, why)
}
