package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"aipm/fsstore"
)

// runDemo walks through aipm on a throw-away project: no agent CLI, no
// network. It is the README's "run" command.
func runDemo(ctx context.Context, e *env, args []string) error {
	fs := e.flags("demo")
	keep := fs.Bool("keep", false, "keep the demo project and print its path")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("demo takes no arguments, got %q", pos[0])
	}
	dir, err := os.MkdirTemp("", "aipm-demo-*")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if !*keep {
		defer os.RemoveAll(dir)
	}
	step := func(argv ...string) error {
		fmt.Fprintf(e.stdout, "\n$ aipm %s\n", strings.Join(argv, " "))
		return run(ctx, append([]string{"--dir", dir}, argv...), e.getenv, e.stdin, e.stdout, e.stderr)
	}
	for _, argv := range [][]string{
		{"init", "--name", "demo"},
		{"agent", "add", "lead", "--type", "human", "--role", "manager", "--name", "Project Lead"},
		{"agent", "add", "coder", "--type", "ai", "--parent", "lead"},
		{"agent", "list"},
		{"doctor"},
	} {
		if err := step(argv...); err != nil {
			return err
		}
	}
	if *keep {
		fmt.Fprintf(e.stdout, "\nthe demo project is in %s (%s holds its state)\n", dir, fsstore.DirName)
	}
	return nil
}
