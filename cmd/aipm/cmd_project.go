package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"

	"aipm/fsstore"
)

func runInit(ctx context.Context, e *env, args []string) error {
	fs := e.flags("init")
	name := fs.String("name", "", "project name (default: the directory's name)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("init takes no arguments, got %q: use --name NAME or --dir DIR", pos[0])
	}
	dir, err := e.projectDir()
	if err != nil {
		return err
	}
	if _, err := fsstore.Init(dir, *name); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "initialized %s\n", fsstore.DirName)
	return nil
}

func runDoctor(ctx context.Context, e *env, args []string) error {
	fs := e.flags("doctor")
	repair := fs.Bool("repair", false, "move torn and invalid lines to quarantine/ and remove stale temp files")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("doctor takes no arguments, got %q", pos[0])
	}
	store, _, err := e.open()
	if store == nil {
		return err
	}
	// A config error is one of the problems doctor reports, not a reason to stop.
	problems, err := store.Doctor(ctx, *repair)
	fsstore.SortProblems(problems)
	unrepaired := 0
	for _, p := range problems {
		if p.Repaired {
			fmt.Fprintf(e.stdout, "repaired: %s\n", p)
		} else {
			fmt.Fprintln(e.stdout, p)
			unrepaired++
		}
	}
	if err != nil {
		return err
	}
	switch {
	case len(problems) == 0:
		fmt.Fprintln(e.stdout, "no problems found")
	case unrepaired == 0:
		fmt.Fprintf(e.stdout, "repaired %d problem(s)\n", len(problems))
	default:
		hint := "run aipm doctor --repair to quarantine torn and invalid lines; fix the rest by hand"
		if *repair {
			hint = "fix these by hand"
		}
		return &exitError{code: 1, err: errors.New(plural(unrepaired, "problem") + " left: " + hint)}
	}
	return nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func runVersion(ctx context.Context, e *env, args []string) error {
	fmt.Fprintf(e.stdout, "aipm %s %s\n", version(), runtime.Version())
	return nil
}

// version is the module version aipm was built at, or "dev".
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
