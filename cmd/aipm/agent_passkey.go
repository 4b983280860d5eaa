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
aipm doctor lists every AI agent without a passkey.

With --save, or when a passkey was saved for the agent before (agent add
--client or --save-passkey), the new one is saved for aipm watch in
.ai-pm/credentials/ID.passkey, replacing the old one, and is not printed
(--json gives passkeyFile instead of passkey).`,
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
	c.Flags().BoolVar(&o.JSON, "json", false, "print {id, passkey} as JSON ({id, passkeyFile} when it is saved)")
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
	r, err := store.ReissuePasskey(cmd.Context(), o.Agent, o.Save)
	if err != nil {
		return err
	}
	w := o.e.stdout
	switch {
	case o.JSON && r.Saved != "":
		return writeJSON(w, map[string]string{"id": o.Agent, "passkeyFile": store.Rel(r.Saved)})
	case o.JSON:
		return writeJSON(w, map[string]string{"id": o.Agent, "passkey": r.Passkey})
	case r.Saved != "": // saved, it is never printed: the file is what a client is given
		fmt.Fprintf(w, "new passkey for %s: saved, not printed: the old one no longer works\n", o.Agent)
		fmt.Fprintf(w, "saved for aipm watch in %s%s\n", store.Rel(r.Saved), map[bool]string{true: ", replacing the one saved before"}[r.Replaced])
		return nil
	}
	fmt.Fprintf(w, "new passkey for %s: %s\n", o.Agent, r.Passkey)
	fmt.Fprintln(w, "(shown once; the old passkey no longer works: give this one to the agent's MCP server)")
	return nil
}
