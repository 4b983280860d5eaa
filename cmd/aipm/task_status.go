package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"aipm/fsstore"
)

type taskStatusOptions struct {
	e      *env
	ID     string
	Status string
	Reason string
	As     string
	JSON   bool
}

func newCmdTaskStatus(e *env, runF func(*taskStatusOptions) error) *cobra.Command {
	o := &taskStatusOptions{e: e}
	c := &cobra.Command{
		Use:   "status ID " + strings.Join(fsstore.Statuses, "|"),
		Short: "Change a task's status",
		Long: `Change a task's status; the transition must be allowed (the error lists the
allowed ones). Moving an agent's task from in_progress to blocked or cancelled
queues an interrupt for that agent (unless the agent itself makes the change):
its next tool call is answered with the interrupt instead of running.`,
		Example: `  aipm task status 01KAQ7 in_progress
  aipm task status 01KAQ7 blocked --reason "requirements changed"`,
		Args: argsExactly(2, "a task id and a status ("+strings.Join(fsstore.Statuses, ", ")+")"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID, o.Status = args[0], args[1]
			if err := fsstore.CheckStatus(o.Status); err != nil {
				return usageError("task status: %v", err)
			}
			if fsstore.CheckStatusReason(o.Status, o.Reason) != nil {
				return usageError("task status: --reason goes with blocked or cancelled, not %s", o.Status)
			}
			if runF != nil {
				return runF(o)
			}
			return taskStatusRun(cmd, o)
		},
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 1 {
				return fsstore.Statuses, cobra.ShellCompDirectiveNoFileComp
			}
			return e.completeTasks(cmd, args, toComplete)
		},
	}
	c.Flags().StringVar(&o.Reason, "reason", "", "why (for blocked or cancelled)")
	c.Flags().StringVar(&o.As, "as", "", "who makes the change (default $AIPM_AS, else the only human)")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the task as JSON (with interrupted: the agent, if one was interrupted)")
	return c
}

func taskStatusRun(cmd *cobra.Command, o *taskStatusOptions) error {
	store, cfg, by, err := o.e.openAs(o.As)
	if err != nil {
		return err
	}
	id, err := taskID(store, o.ID)
	if err != nil {
		return err
	}
	before, err := store.Task(id)
	if err != nil {
		return fmt.Errorf("task status: %w", err)
	}
	after, err := store.UpdateTask(cmd.Context(), cfg, id, by, fsstore.TaskChange{Status: o.Status, Reason: o.Reason})
	var ce *fsstore.CodeError
	if errors.As(err, &ce) && ce.Code == fsstore.CodeReasonRequired {
		return usageError("task status: a task set to blocked needs a reason: pass --reason \"why\"")
	}
	if err != nil {
		return fmt.Errorf("task status: %w", err)
	}
	out := taskJSON{Task: after}
	if fsstore.Interrupts(before, after, by) {
		out.Interrupted = after.Assignee
	}
	if o.JSON {
		return writeJSON(o.e.stdout, out)
	}
	fmt.Fprintf(o.e.stdout, "%s: %s -> %s\n", after.ID, before.Status, after.Status)
	if out.Interrupted != "" {
		fmt.Fprintf(o.e.stdout, "queued an interrupt for %s: it replaces the answer to %s's next tool call\n", out.Interrupted, out.Interrupted)
	}
	return nil
}
