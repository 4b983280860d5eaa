package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"aipm/fsstore"
	"aipm/internal/table"
	"aipm/internal/taskgraph"
)

type taskGraphOptions struct {
	e      *env
	Format string
	All    bool
}

func newCmdTaskGraph(e *env, runF func(*taskGraphOptions) error) *cobra.Command {
	o := &taskGraphOptions{e: e}
	c := &cobra.Command{
		Use:   "graph [--format text|mermaid|dot] [--all]",
		Short: "Draw the tasks' dependencies: text, Mermaid or Graphviz",
		Long: `Draw the dependencies of the project's open tasks: an arrow from each task
to the tasks that wait for it (task add --after, task depend), and a dotted
one from a parent to its subtasks, which it waits for when someone else has
them. --all draws every task's, done and cancelled ones too.

--format text (the default) lists the tasks, each after what it waits for,
with its id, status and title, and under it the tasks it waits for and its
subtasks, with their statuses. --format mermaid prints a flowchart for a
Markdown page (put it in a mermaid code block: GitHub draws it), a task's
status as its class; --format dot prints Graphviz's language (dot -Tsvg).`,
		Example: "  aipm task graph\n  aipm task graph --all --format mermaid > plan.mmd\n  aipm task graph --format dot | dot -Tsvg > plan.svg",
		Args:    argsNone,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(taskgraph.Formats, o.Format) {
				return usageError("task graph: the format %q is not one: use one of %s", o.Format, strings.Join(taskgraph.Formats, ", "))
			}
			if runF != nil {
				return runF(o)
			}
			return taskGraphRun(o)
		},
	}
	c.Flags().StringVar(&o.Format, "format", taskgraph.Text, strings.Join(taskgraph.Formats, ", "))
	c.Flags().BoolVar(&o.All, "all", false, "every task's dependencies, not only the open tasks'")
	c.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(taskgraph.Formats, cobra.ShellCompDirectiveNoFileComp))
	return c
}

func taskGraphRun(o *taskGraphOptions) error {
	store, _, err := o.e.open()
	if err != nil {
		return err
	}
	tasks, _, problems, err := store.Tasks(fsstore.TaskFilter{})
	if err != nil {
		return fmt.Errorf("task graph: %w", err)
	}
	warnSkipped(o.e, problems)
	g := taskgraph.Build(tasks, o.All)
	if len(g.Nodes) == 0 && o.Format == taskgraph.Text {
		what := "no open task waits for another (--all draws every task's dependencies)"
		if o.All {
			what = "no task waits for another: make one wait with aipm task depend ID --on ID"
		}
		_, err := fmt.Fprintln(o.e.stdout, what)
		return err
	}
	short, err := table.Shortener(store.IDs, fsstore.Tasks)
	if err != nil {
		return fmt.Errorf("task graph: %w", err)
	}
	out, err := taskgraph.Render(g, o.Format, short)
	if err != nil {
		return fmt.Errorf("task graph: %w", err)
	}
	_, err = io.WriteString(o.e.stdout, out)
	return err
}
