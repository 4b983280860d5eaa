package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"aipm/fsstore"
)

type taskAddOptions struct {
	e     *env
	Task  fsstore.NewTask
	After []string
	As    string
	JSON  bool
}

func newCmdTaskAdd(e *env, runF func(*taskAddOptions) error) *cobra.Command {
	o := &taskAddOptions{e: e}
	c := &cobra.Command{
		Use:   "add TITLE",
		Short: "Create a task",
		Long: `Create a task with a title (quote a title with spaces). It starts as todo,
normal priority, unassigned, requested by you (--as, $AIPM_AS, or the
project's only human). A task may start in progress if it has an assignee.

--after names the tasks it waits for: it is ready once they are all done, and
an assigned todo task then goes in progress by itself (aipm watch starts its
assignee). --group puts a task nobody is assigned in the queue of a group of
config.toml: its AI agents may claim it (without it, any AI agent may).`,
		Example: `  aipm task add "Write the README"
  aipm task add "Fix login" --assignee coder --priority urgent --status in_progress
  aipm task add "Sub-task" --parent 01KAQ7 --json
  aipm task add "Deploy" --after 01KAQ7,01KAQ9 --assignee ops
  aipm task add "Write a test" --group testers`,
		Args: argsExactly(1, "exactly one TITLE (quote a title with spaces)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Task.Title = strings.TrimSpace(args[0])
			if o.Task.Title == "" {
				return usageError("task add: the title is empty: say in a few words what the work is")
			}
			if !slices.Contains(fsstore.Priorities, o.Task.Priority) {
				return usageError("task add: priority %q is invalid: use one of %s", o.Task.Priority, strings.Join(fsstore.Priorities, ", "))
			}
			if err := fsstore.CheckStartStatus(o.Task.Status); err != nil {
				return usageError("task add: %v", err)
			}
			if o.Task.Status == fsstore.StatusInProgress && o.Task.Assignee == "" {
				return usageError("task add: a task in progress needs an assignee: pass --assignee AGENT")
			}
			if runF != nil {
				return runF(o)
			}
			return taskAddRun(cmd, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Task.Description, "description", "", "details of the work")
	f.StringVar(&o.Task.Assignee, "assignee", "", "the agent who does the work")
	f.StringVar(&o.Task.Priority, "priority", fsstore.DefaultPriority, strings.Join(fsstore.Priorities, ", "))
	f.StringVar(&o.Task.Status, "status", fsstore.StatusTodo, strings.Join(fsstore.StartStatuses, ", "))
	f.StringVar(&o.Task.ParentID, "parent", "", "the parent task's id (or a unique start of it)")
	f.StringSliceVar(&o.After, "after", nil, fmt.Sprintf("the tasks it waits for, comma-separated ids (or unique starts), at most %d", fsstore.MaxBlockers))
	f.StringVar(&o.Task.Group, "group", "", "the group of config.toml whose AI agents may claim it")
	f.StringVar(&o.As, "as", "", "who requests it (default $AIPM_AS, else the only human)")
	f.BoolVar(&o.JSON, "json", false, "print the new task as JSON")
	c.RegisterFlagCompletionFunc("priority", cobra.FixedCompletions(fsstore.Priorities, cobra.ShellCompDirectiveNoFileComp))
	return c
}

func taskAddRun(cmd *cobra.Command, o *taskAddOptions) error {
	store, cfg, by, err := o.e.openAs(o.As)
	if err != nil {
		return err
	}
	in := o.Task
	in.Requester = by
	if err := agentRef(cfg, in.Assignee, "--assignee"); err != nil {
		return err
	}
	if in.ParentID != "" {
		if in.ParentID, err = taskID(store, in.ParentID); err != nil {
			return fmt.Errorf("--parent: %w", err)
		}
	}
	if in.BlockedBy, err = taskIDs(store, o.After, "--after"); err != nil {
		return err
	}
	t, err := store.CreateTask(cmd.Context(), cfg, in)
	if err != nil {
		return fmt.Errorf("task add: %w", err)
	}
	if o.JSON {
		return writeJSON(o.e.stdout, t)
	}
	_, err = fmt.Fprintf(o.e.stdout, "created %s %q\n", t.ID, t.Title)
	return err
}
