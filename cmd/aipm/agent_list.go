package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"aipm/fsstore"
	"aipm/internal/launch"
	"aipm/internal/status"
)

type agentListOptions struct {
	e     *env
	JSON  bool
	Quiet bool
}

func newCmdAgentList(e *env, runF func(*agentListOptions) error) *cobra.Command {
	o := &agentListOptions{e: e}
	c := &cobra.Command{
		Use:     "list",
		Short:   "List the project's agents",
		Long:    "List the agents of .ai-pm/config.toml: id, type, role, parent, name, whether an AI agent has a passkey (STALE: the one saved for aipm watch is not it), and what aipm watch starts for it and what that may do (a client added with --client: read, edit and run inside the project, or anything). --quiet prints the ids only, one a line.",
		Example: "  aipm agent list\n  aipm agent list --json\n  aipm agent list -q",
		Args:    argsNone,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := quietJSON("agent list", o.Quiet, o.JSON); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return agentListRun(o)
		},
	}
	c.Flags().BoolVar(&o.JSON, "json", false, "print the agents as a JSON array")
	c.Flags().BoolVarP(&o.Quiet, "quiet", "q", false, "print only the agent ids, one a line")
	return c
}

func agentListRun(o *agentListOptions) error {
	store, cfg, err := o.e.open()
	if err != nil {
		return err
	}
	list := []status.AgentEntry{}
	for _, a := range cfg.Agents {
		info := status.AgentEntry{ID: a.ID, Type: a.Type, Role: a.Role, Parent: a.Parent, Name: a.Name}
		info.Starts, info.May = launch.Starts(a)
		if info.Role == "" {
			info.Role = fsstore.RoleWorker
		}
		if path, err := store.PasskeyPath(a.ID); err == nil && a.Type == fsstore.AgentAI {
			_, serr := os.Stat(path)
			info.Passkey = serr == nil
			info.SavedPasskey = store.SavedPasskeyOf(a.ID)
		}
		list = append(list, info)
	}
	if o.JSON {
		return writeJSON(o.e.stdout, list)
	}
	if o.Quiet {
		return printIDs(o.e.stdout, list, func(x status.AgentEntry) string { return x.ID })
	}
	if len(list) == 0 {
		_, err := fmt.Fprintln(o.e.stdout, "no agents: add one with aipm agent add ID --type ai|human")
		return err
	}
	return status.AgentTable(list).Print(o.e.stdout, o.e.colour, o.e.width)
}
