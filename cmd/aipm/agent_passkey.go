package main

import (
	"aipm/fsstore"
	"fmt"

	"github.com/spf13/cobra"
)

type agentPasskeyOptions struct {
	e     *env
	Agent string
	Save  bool
	JSON  bool
}

func newCmdAgentPasskey(e *env, runF func(*agentPasskeyOptions) error) *cobra.Command {
	o := &agentPasskeyOptions{e: e}
	c := &cobra.Command{
		Use:   "passkey ID",
		Short: "Issue a new passkey for an AI agent (the old one stops working)",
		Long: `Issue a new passkey for an AI agent and print it once; its salted hash replaces
the old one, which stops working at once (live sessions keep running until
they end). This is how a clone of the project gets credentials (passkey hashes
are never in git), and how an agent added to config.toml by hand gets one.
aipm doctor lists every AI agent without a passkey.`,
		Example: "  aipm agent passkey coder\n  aipm agent passkey coder --json",
		Args:    argsExactly(1, "exactly one agent id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Agent = args[0]
			if runF != nil {
				return runF(o)
			}
			return agentPasskeyRun(cmd, o)
		},
	}
	c.ValidArgsFunction = e.completeAgents(0, fsstore.AgentAI)
	c.Flags().BoolVar(&o.Save, "save", false, "also save it in .ai-pm/credentials/ID.passkey (0600, not in git), so that aipm watch can start the agent")
	c.Flags().BoolVar(&o.JSON, "json", false, "print {id, passkey} as JSON")
	return c
}

func agentPasskeyRun(cmd *cobra.Command, o *agentPasskeyOptions) error {
	store, cfg, err := o.e.open()
	if err != nil {
		return err
	}
	if err := aiAgent(cfg, o.Agent, "humans need no passkey; they act through the CLI with --as "+o.Agent); err != nil {
		return err
	}
	passkey, err := store.ReissuePasskey(cmd.Context(), o.Agent)
	if err != nil {
		return err
	}
	if o.Save {
		path, err := store.SaveCredential(o.Agent, passkey)
		if err != nil {
			return err
		}
		fmt.Fprintf(o.e.stderr, "saved for aipm watch in %s\n", store.Rel(path))
	}
	if o.JSON {
		return writeJSON(o.e.stdout, map[string]string{"id": o.Agent, "passkey": passkey})
	}
	fmt.Fprintf(o.e.stdout, "new passkey for %s: %s\n", o.Agent, passkey)
	fmt.Fprintln(o.e.stdout, "(shown once; the old passkey no longer works: give this one to the agent's MCP server)")
	return nil
}
