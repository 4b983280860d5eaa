package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"aipm/fsstore"
	"aipm/internal/status"
)

type taskShowOptions struct {
	e    *env
	ID   string
	JSON bool
}

func newCmdTaskShow(e *env, runF func(*taskShowOptions) error) *cobra.Command {
	o := &taskShowOptions{e: e}
	c := &cobra.Command{
		Use:   "show ID",
		Short: "Show every field of a task",
		Long: `Show every non-empty field of a task, with what it still waits for (or that
it is ready) and the open tasks that wait for it; --json prints its
document as stored. Times are local (or UTC with --utc), with their offset.`,
		Example: "  aipm task show 01KAQ7\n  aipm task show tsk_01KAQ7ZB3C --json",
		Args:    argsExactly(1, "exactly one task id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID = args[0]
			if runF != nil {
				return runF(o)
			}
			return taskShowRun(o)
		},
	}
	c.Flags().BoolVar(&o.JSON, "json", false, "print the task's JSON document")
	c.ValidArgsFunction = e.completeTasks
	return c
}

func taskShowRun(o *taskShowOptions) error {
	store, _, err := o.e.open()
	if err != nil {
		return err
	}
	id, err := taskID(store, o.ID)
	if err != nil {
		return err
	}
	t, err := store.Task(id)
	if err != nil {
		return err
	}
	if o.JSON {
		return writeJSON(o.e.stdout, t)
	}
	deps, err := store.TaskDeps([]string{t.ID})
	if err != nil {
		return fmt.Errorf("task show: %w", err)
	}
	d := status.TaskDetail{Task: t, TaskDeps: deps[t.ID]}
	if d.Leases, err = store.Leases(); err != nil {
		return fmt.Errorf("leases of %s: %w", t.ID, err)
	}
	return status.PrintTask(o.e.stdout, d, o.e.timeText)
}

// taskJSON is what task commands that change a task print with --json.
type taskJSON struct {
	fsstore.Task
	Interrupted string `json:"interrupted,omitempty"`
	Notified    string `json:"notified,omitempty"`
}
