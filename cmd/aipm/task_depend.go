package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"aipm/fsstore"
)

type taskDependOptions struct {
	e      *env
	ID     string
	On     []string
	Remove bool
	As     string
	JSON   bool
}

func newCmdTaskDepend(e *env, runF func(*taskDependOptions) error) *cobra.Command {
	o := &taskDependOptions{e: e}
	c := &cobra.Command{
		Use:   "depend ID --on ID[,ID...] [--remove]",
		Short: "Make a task wait for other tasks, or stop waiting",
		Long: `Make a task wait for other tasks of the project (or, with --remove, stop
waiting for them). A task is ready once every task it waits for is done; an
assigned todo task then goes in progress by itself, and aipm watch starts its
assignee. A dependency that would make a task wait for itself, through other
tasks or its subtasks, is refused, naming the cycle.`,
		Example: "  aipm task depend 01KAQ9 --on 01KAQ7\n  aipm task depend 01KAQ9 --on 01KAQ7,01KAQ8\n  aipm task depend 01KAQ9 --on 01KAQ7 --remove",
		Args:    argsExactly(1, "exactly one task ID, and the tasks it waits for in --on"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID = args[0]
			if len(o.On) == 0 {
				return usageError("task depend: name the tasks %s waits for with --on ID[,ID...]", o.ID)
			}
			if runF != nil {
				return runF(o)
			}
			return taskDependRun(cmd, o)
		},
	}
	c.ValidArgsFunction = e.completeTasks
	c.Flags().StringSliceVar(&o.On, "on", nil, fmt.Sprintf("the tasks it waits for, comma-separated ids (or unique starts), at most %d", fsstore.MaxBlockers))
	c.Flags().BoolVar(&o.Remove, "remove", false, "stop waiting for the tasks of --on")
	c.Flags().StringVar(&o.As, "as", "", "who makes the change (default $AIPM_AS, else the only human)")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the task as JSON")
	return c
}

func taskDependRun(cmd *cobra.Command, o *taskDependOptions) error {
	store, cfg, by, err := o.e.openAs(o.As)
	if err != nil {
		return err
	}
	id, err := taskID(store, o.ID)
	if err != nil {
		return err
	}
	var held []string // --remove takes a blocker as written: one that names no task too, as doctor says
	if o.Remove {
		t, _ := store.Task(id) // one that cannot be read: UpdateTask says why
		held = t.BlockedBy
	}
	on, err := taskIDs(store, o.On, "--on", held...)
	if err != nil {
		return err
	}
	change := fsstore.BlockersChange{Add: on}
	if o.Remove {
		change = fsstore.BlockersChange{Remove: on}
	}
	t, err := store.UpdateTask(cmd.Context(), cfg, id, by, fsstore.TaskChange{Blockers: &change})
	if err != nil {
		return fmt.Errorf("task depend: %w", err)
	}
	if o.JSON {
		return writeJSON(o.e.stdout, t)
	}
	waits := "nothing"
	if len(t.BlockedBy) > 0 {
		waits = strings.Join(t.BlockedBy, ", ")
	}
	_, err = fmt.Fprintf(o.e.stdout, "%s waits for %s\n", t.ID, waits)
	return err
}
