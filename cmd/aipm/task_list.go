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
		Use:   "list [--status S] [--assignee AGENT] [--ready|--waiting] [--unassigned]",
		Short: "List tasks, newest first",
		Long: `List the project's tasks, newest first, optionally only those with a status
or an assignee. --ready lists the tasks ready to start (todo, approved, and
waiting for nothing), --waiting the open ones that wait for other tasks (a
last column says for which, and their statuses), --unassigned those nobody
is assigned. The table shows each id by its shortest unique start (any
command takes it), when the task last changed, and titles cut to the
terminal's width ($COLUMNS if set); --json prints the whole documents, and
--quiet the whole ids, one a line. A task document that cannot be read is
skipped with a warning.`,
		Example: "  aipm task list\n  aipm task list --status in_progress --assignee coder\n  aipm task list --ready --unassigned\n  aipm task list --waiting\n  aipm task list --status blocked -q",
		Args:    argsNone,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := quietJSON("task list", o.Quiet, o.JSON); err != nil {
				return err
			}
			if o.Filter.Ready && o.Filter.Waiting {
				return usageError("task list: a task is never both ready and waiting: pass --ready or --waiting, not both")
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
	c.Flags().BoolVar(&o.Filter.Ready, "ready", false, "only tasks ready to start: todo, approved, waiting for nothing")
	c.Flags().BoolVar(&o.Filter.Waiting, "waiting", false, "only open tasks waiting for other tasks, and for which")
	c.Flags().BoolVar(&o.Filter.Unassigned, "unassigned", false, "only tasks nobody is assigned")
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
		return printIDs(o.e.stdout, tasks, func(x fsstore.Task) string { return x.ID })
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
	var waits map[string][]fsstore.Wait
	if o.Filter.Waiting {
		ids := make([]string, len(tasks))
		for i, t := range tasks {
			ids[i] = t.ID
		}
		deps, err := store.TaskDeps(ids)
		if err != nil {
			return fmt.Errorf("task list: %w", err)
		}
		waits = make(map[string][]fsstore.Wait, len(deps))
		for id, d := range deps {
			waits[id] = d.Waits
		}
	}
	return status.TaskTable(tasks, short, o.e.age, waits).Print(o.e.stdout, o.e.colour, o.e.width)
}
