package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"aipm/fsstore"
)

type demoOptions struct {
	e    *env
	Keep bool
}

func newCmdDemo(e *env, runF func(*demoOptions) error) *cobra.Command {
	o := &demoOptions{e: e}
	c := &cobra.Command{
		Use:   "demo [--keep]",
		Short: "Walk through aipm on a throw-away project (no agents, no network)",
		Long: `Run the first steps of aipm on a new project in a temporary directory and print
each command before its output. Every printed command line can be pasted into
a shell (add --dir DIR to run it on the kept project).`,
		Example: "  aipm demo\n  aipm demo --keep",
		Args:    argsNone,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(o)
			}
			return demoRun(cmd, o)
		},
	}
	c.Flags().BoolVar(&o.Keep, "keep", false, "keep the demo project and print its path")
	return c
}

func demoRun(cmd *cobra.Command, o *demoOptions) error {
	e := o.e
	dir, err := os.MkdirTemp("", "aipm-demo-*")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if !o.Keep {
		defer os.RemoveAll(dir)
	}
	steps := [][]string{
		{"init", "--name", "demo"},
		{"agent", "add", "lead", "--type", "human", "--role", "manager", "--name", "Project Lead"},
		{"agent", "add", "coder", "--type", "ai", "--parent", "lead"},
		{"agent", "list"},
		{"task", "add", "Fix the login form", "--assignee", "coder", "--priority", "high"},
		{"send", "--to", "coder", "The login form rejects valid passwords; see the task."},
		{"status"},
		{"doctor"},
	}
	// The demo project has one human, who is the actor: an AIPM_AS meant
	// for another project must not leak in.
	getenv := func(k string) string {
		if k == "AIPM_AS" {
			return ""
		}
		return e.getenv(k)
	}
	for _, argv := range steps {
		quoted := make([]string, len(argv))
		for i, a := range argv {
			quoted[i] = shellQuote(a)
		}
		fmt.Fprintf(e.stdout, "\n$ aipm %s\n", strings.Join(quoted, " "))
		err := run(cmd.Context(), append([]string{"--dir", dir}, argv...), getenv, e.stdin, e.stdout, e.stderr)
		if err != nil {
			return err
		}
	}
	if o.Keep {
		fmt.Fprintf(e.stdout, "\nthe demo project is in %s (%s holds its state)\n", dir, fsstore.DirName)
	}
	return nil
}
