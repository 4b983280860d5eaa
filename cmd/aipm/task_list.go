package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"aipm/fsstore"
	"aipm/internal/status"
	"aipm/internal/table"
)

type taskListOptions struct {
	e      *env
	Filter fsstore.TaskFilter
	JSON   bool
	Quiet  bool
}

func newCmdTaskList(e *env, runF func(*taskListOptions) error) *cobra.Command {
	o := &taskListOptions{e: e}
	c := &cobra.Command{
		Use:   "list [--status S] [--assignee AGENT]",
		Short: "List tasks, newest first",
		Long: `List the project's tasks, newest first, optionally only those with a status
or an assignee. The table shows each id by its shortest unique start (any
command takes it), when the task last changed, and titles cut to the
terminal's width ($COLUMNS if set); --json prints the whole documents, and
--quiet the whole ids, one a line. A task document that cannot be read is
skipped with a warning.`,
		Example: "  aipm task list\n  aipm task list --status in_progress --assignee coder\n  aipm task list --json\n  aipm task list --status blocked -q",
		Args:    argsNone,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := quietJSON("task list", o.Quiet, o.JSON); err != nil {
				return err
			}
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
	c.Flags().BoolVarP(&o.Quiet, "quiet", "q", false, "print only the whole task ids, one a line")
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
	warnSkipped(o.e, problems)
	switch {
	case o.JSON:
		if tasks == nil {
			tasks = []fsstore.Task{}
		}
		return writeJSON(o.e.stdout, tasks)
	case o.Quiet:
		ids := make([]string, len(tasks))
		for i, t := range tasks {
			ids[i] = t.ID
		}
		return printIDs(o.e.stdout, ids)
	case len(tasks) == 0 && o.Filter == fsstore.TaskFilter{}:
		_, err := fmt.Fprintln(o.e.stdout, "no tasks: add one with aipm task add TITLE")
		return err
	case len(tasks) == 0:
		_, err := fmt.Fprintln(o.e.stdout, "no matching tasks")
		return err
	}
	short, err := table.Shortener(store.IDs, fsstore.Tasks)
	if err != nil {
		return fmt.Errorf("task list: %w", err)
	}
	t := &table.Table{Header: []string{"ID", "STATUS", "PRIORITY", "ASSIGNEE", "UPDATED", "TITLE"}, Cut: 5}
	for _, task := range tasks {
		t.Add(short(task.ID), statusText(task), task.Priority, table.Dash(task.Assignee), o.e.age(task.UpdatedAt), visible(table.OneLine(task.Title)))
	}
	t.Style = func(col int, cell string) string {
		if col == 1 {
			return status.TaskStyle(cell)
		}
		return ""
	}
	return t.Print(o.e.stdout, o.e.colour, o.e.width)
}

// statusText is the status (statusNote), with the approval state when it
// is not approved.
func statusText(t fsstore.Task) string {
	if t.ApprovalStatus == fsstore.ApprovalApproved || t.ApprovalStatus == "" {
		return statusNote(t)
	}
	return statusNote(t) + " (" + t.ApprovalStatus + ")"
}

// statusNote is the status, saying when the file holds one aipm does not
// take: a status that is not one, or a hand edit it does not allow.
func statusNote(t fsstore.Task) string {
	switch {
	case fsstore.CheckStatus(t.Status) != nil:
		return t.Status + " (invalid: not a status, see aipm doctor)"
	case t.HandStatus != "":
		return t.Status + " (" + t.HandStatus + " by hand: not allowed, see aipm doctor)"
	}
	return t.Status
}
