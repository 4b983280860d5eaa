package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"aipm/fsstore"
)

type agentRemoveOptions struct {
	e     *env
	Agent string
	Force bool
	JSON  bool
}

func newCmdAgentRemove(e *env, runF func(*agentRemoveOptions) error) *cobra.Command {
	o := &agentRemoveOptions{e: e}
	c := &cobra.Command{
		Use:   "remove ID [--force]",
		Short: "Remove an agent from config.toml (refused while it has open tasks or sessions)",
		Long: `Remove the agent's [[agents]] entry from .ai-pm/config.toml (the rest of the
file is kept as it is) and its passkey hash. Its chat history stays, readable
with aipm log.

Refused while the agent has open tasks (not done or cancelled) or live
sessions; --force removes it anyway, ending its live sessions and leaving its
tasks assigned for a person to sort out. An agent that is another agent's
parent is never removed: change the child's parent first.`,
		Example: "  aipm agent remove tester\n  aipm agent remove tester --force",
		Args:    argsExactly(1, "exactly one agent id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Agent = args[0]
			if runF != nil {
				return runF(o)
			}
			return agentRemoveRun(cmd, o)
		},
	}
	c.ValidArgsFunction = e.completeAgents(0, "")
	c.Flags().BoolVar(&o.Force, "force", false, "remove it even with open tasks or live sessions (they are ended)")
	c.Flags().BoolVar(&o.JSON, "json", false, "print {id, openTasks, endedSessions} as JSON")
	return c
}

func agentRemoveRun(cmd *cobra.Command, o *agentRemoveOptions) error {
	store, cfg, err := o.e.open()
	if err != nil {
		return err
	}
	if err := agentRef(cfg, o.Agent, "agent"); err != nil {
		return err
	}
	res, err := store.RemoveAgent(cmd.Context(), o.Agent, o.Force)
	if err != nil {
		if errors.Is(err, fsstore.ErrInUse) {
			return failed("%v", err)
		}
		return err
	}
	if o.JSON {
		return writeJSON(o.e.stdout, res)
	}
	fmt.Fprintf(o.e.stdout, "removed agent %s (its chat history stays in %s/agents/%s)\n", o.Agent, fsstore.DirName, o.Agent)
	if len(res.EndedSessions) > 0 {
		fmt.Fprintf(o.e.stdout, "ended %s: %s\n", plural(len(res.EndedSessions), "live session"), strings.Join(res.EndedSessions, ", "))
	}
	if len(res.OpenTasks) > 0 {
		fmt.Fprintf(o.e.stdout, "still assigned to %s: %s (reassign them with aipm task assign)\n", o.Agent, strings.Join(res.OpenTasks, ", "))
	}
	return nil
}
