package main

import "github.com/spf13/cobra"

func newCmdAgent(e *env) *cobra.Command {
	return newNoun("agent", "Add, list, change, re-key and remove the project's agents",
		`Agents are the AI agents and humans of the project, listed in .ai-pm/config.toml.
An AI agent authenticates to "aipm serve" with a passkey that aipm prints once
and stores only as a salted hash (never in git). Humans act through the CLI
(with --as ID) and have no passkey.`,
		`  aipm agent add lead --type human --role manager
  aipm agent add coder --type ai --parent lead
  aipm agent list
  aipm agent passkey coder
  aipm agent set coder --parent lead
  aipm agent remove coder`,
		newCmdAgentAdd(e, nil),
		newCmdAgentList(e, nil),
		newCmdAgentPasskey(e, nil),
		newCmdAgentSet(e, nil),
		newCmdAgentRemove(e, nil),
	)
}
