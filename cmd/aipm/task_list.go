package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"aipm/fsstore"
)

type taskListOptions struct {
	e      *env
	Filter fsstore.TaskFilter
	JSON   bool
}

func newCmdTaskList(e *env, runF func(*taskListOptions) error) *cobra.Command {
	o := &taskListOptions{e: e}
	c := &cobra.Command{
		Use:     "list [--status S] [--assignee AGENT]",
		Short:   "List tasks, newest first",
		Long:    "List the project's tasks, newest first, optionally only those with a status or an assignee. A task document that cannot be read is skipped with a warning.",
		Example: "  aipm task list\n  aipm task list --status in_progress --assignee coder\n  aipm task list --json",
		Args:    argsNone,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Filter.Status != "" {
				if err := fsstore.CheckStatus(o.Filter.Status); err != nil {
					return usageError("task list: %v", err)
				}
			}
			if runF != nil {
				return runF(o)
			}
			return taskListRun(o)
		},
	}
	c.Flags().StringVar(&o.Filter.Status, "status", "", "only tasks with this status")
	c.Flags().StringVar(&o.Filter.Assignee, "assignee", "", "only tasks assigned to this agent")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the tasks as a JSON array")
	c.RegisterFlagCompletionFunc("status", completeStatuses)
	return c
}

func taskListRun(o *taskListOptions) error {
	store, cfg, err := o.e.open()
	if err != nil {
		return err
	}
	tasks, _, problems, err := store.Tasks(o.Filter)
	if err != nil {
		return fmt.Errorf("task list: %w", err)
	}
	if len(tasks) == 0 {
		// An agent removed with --force keeps its tasks, so only an
		// assignee that names no agent and no task is a mistake.
		if err := agentRef(cfg, o.Filter.Assignee, "--assignee"); err != nil {
			return err
		}
	}
	for _, p := range problems {
		fmt.Fprintf(o.e.stderr, "aipm: warning: skipped %v: fix it by hand (aipm doctor lists every problem)\n", p)
	}
	switch {
	case o.JSON:
		if tasks == nil {
			tasks = []fsstore.Task{}
		}
		return writeJSON(o.e.stdout, tasks)
	case len(tasks) == 0 && o.Filter == fsstore.TaskFilter{}:
		_, err := fmt.Fprintln(o.e.stdout, "no tasks: add one with aipm task add TITLE")
		return err
	case len(tasks) == 0:
		_, err := fmt.Fprintln(o.e.stdout, "no matching tasks")
		return err
	}
	t := &table{header: []string{"ID", "STATUS", "PRIORITY", "ASSIGNEE", "TITLE"}}
	for _, task := range tasks {
		t.add(task.ID, statusText(task), task.Priority, dash(task.Assignee), visible(strings.Join(strings.Fields(task.Title), " ")))
	}
	t.style = func(col int, cell string) string {
		if col == 1 {
			return statusStyle(cell)
		}
		return ""
	}
	return t.print(o.e.stdout, o.e.colour)
}

// statusText is the status, with the approval state when it is not approved.
func statusText(t fsstore.Task) string {
	if t.ApprovalStatus == fsstore.ApprovalApproved || t.ApprovalStatus == "" {
		return t.Status
	}
	return t.Status + " (" + t.ApprovalStatus + ")"
}
