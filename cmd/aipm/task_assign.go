package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"aipm/fsstore"
)

type taskAssignOptions struct {
	e     *env
	ID    string
	Agent string
	None  bool
	As    string
	JSON  bool
}

func newCmdTaskAssign(e *env, runF func(*taskAssignOptions) error) *cobra.Command {
	o := &taskAssignOptions{e: e}
	c := &cobra.Command{
		Use:     "assign ID AGENT|--none",
		Short:   "Assign a task to an agent, or unassign it",
		Long:    "Assign a task to an agent of the project, or remove its assignee with --none. A task in progress keeps its assignee until it is blocked or stopped.",
		Example: "  aipm task assign 01KAQ7 coder\n  aipm task assign 01KAQ7 --none",
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case o.None && len(args) == 2:
				return usageError("task assign: give an agent or --none, not both")
			case len(args) == 2 && args[1] == "":
				return usageError("task assign: the agent is empty: give an agent id (see aipm agent list), or --none to remove the assignee")
			case len(args) == 2 || (o.None && len(args) == 1):
				return nil
			}
			return usageError("task assign needs a task id and an agent: aipm task assign ID AGENT, or aipm task assign ID --none")
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID = args[0]
			if !o.None {
				o.Agent = args[1]
			}
			if runF != nil {
				return runF(o)
			}
			return taskAssignRun(cmd, o)
		},
	}
	c.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) == 1 {
			return e.completeAgents(1, "")(cmd, args, toComplete)
		}
		return e.completeTasks(cmd, args, toComplete)
	}
	c.Flags().BoolVar(&o.None, "none", false, "remove the assignee")
	c.Flags().StringVar(&o.As, "as", "", "who makes the change (default $AIPM_AS, else the only human)")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the task as JSON")
	return c
}

func taskAssignRun(cmd *cobra.Command, o *taskAssignOptions) error {
	store, cfg, by, err := o.e.openAs(o.As)
	if err != nil {
		return err
	}
	if err := agentRef(cfg, o.Agent, "agent"); err != nil {
		return err
	}
	id, err := taskID(store, o.ID)
	if err != nil {
		return err
	}
	t, err := store.UpdateTask(cmd.Context(), cfg, id, by, fsstore.TaskChange{Assignee: &o.Agent})
	if err != nil {
		return fmt.Errorf("task assign: %w", err)
	}
	switch {
	case o.JSON:
		return writeJSON(o.e.stdout, t)
	case o.Agent == "":
		_, err = fmt.Fprintf(o.e.stdout, "unassigned %s\n", t.ID)
	default:
		_, err = fmt.Fprintf(o.e.stdout, "assigned %s to %s\n", t.ID, o.Agent)
	}
	return err
}
