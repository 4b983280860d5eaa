package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"aipm/fsstore"
	"aipm/internal/table"
)

type interruptOptions struct {
	e      *env
	Agent  string
	Reason string
	Task   string
	As     string
	JSON   bool
}

func newCmdInterrupt(e *env, runF func(*interruptOptions) error) *cobra.Command {
	o := &interruptOptions{e: e}
	c := &cobra.Command{
		Use:   "interrupt AGENT REASON [--task ID]",
		Short: "Tell an AI agent to stop: its next tool call gets the interrupt",
		Long: `Queue an interrupt for an AI agent: the answer to its next tool call is replaced
by the interrupt (the tool does not run), telling it to stop and report. With
--task only the agent's task session on that task is stopped; without it any
of its live sessions, and with none it is refused (nobody would read it). The
agent sees it at its next call, not before.`,
		Example: `  aipm interrupt coder "stop and wait for the new plan"
  aipm interrupt coder "wrong approach" --task 01KAQ7`,
		Args: argsExactly(2, "an agent and a reason"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Agent, o.Reason = args[0], strings.TrimSpace(args[1])
			if o.Reason == "" {
				return usageError("interrupt needs a reason: say why %s must stop", o.Agent)
			}
			if runF != nil {
				return runF(o)
			}
			return interruptRun(cmd, o)
		},
	}
	c.ValidArgsFunction = e.completeAgents(0, fsstore.AgentAI)
	c.RegisterFlagCompletionFunc("task", func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return e.taskIDs(toComplete), cobra.ShellCompDirectiveNoFileComp
	})
	c.RegisterFlagCompletionFunc("as", e.completeAgents(-1, fsstore.AgentHuman))
	c.Flags().StringVar(&o.Task, "task", "", "the task the agent must stop working on (id or unique start)")
	c.Flags().StringVar(&o.As, "as", "", "who interrupts (default $AIPM_AS, else the only human)")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the queued notification as JSON")
	return c
}

func interruptRun(cmd *cobra.Command, o *interruptOptions) error {
	store, cfg, by, err := o.e.openAs(o.As)
	if err != nil {
		return err
	}
	if err := aiAgent(cfg, o.Agent, "only AI agents' sessions can be interrupted"); err != nil {
		return err
	}
	in := fsstore.Interruption{Agent: o.Agent, By: by, Reason: o.Reason}
	if o.Task != "" {
		id, err := taskID(store, o.Task)
		if err != nil {
			return fmt.Errorf("--task: %w", err)
		}
		t, err := store.Task(id)
		if err != nil {
			return err
		}
		if t.Assignee != o.Agent {
			return usageError("task %s is assigned to %s, not %s: interrupt its assignee, or leave out --task", t.ID, table.Dash(t.Assignee), o.Agent)
		}
		in.Task = &t
	}
	n, _, err := store.WriteInterrupt(cmd.Context(), in)
	if err != nil {
		return err
	}
	if o.JSON {
		return writeJSON(o.e.stdout, n)
	}
	if in.Task != nil {
		_, err = fmt.Fprintf(o.e.stdout, "queued an interrupt for %s's task session on %s: it replaces the answer to that session's next tool call\n", o.Agent, in.Task.ID)
		return err
	}
	_, err = fmt.Fprintf(o.e.stdout, "queued an interrupt for %s: it replaces the answer to %s's next tool call\n", o.Agent, o.Agent)
	return err
}
