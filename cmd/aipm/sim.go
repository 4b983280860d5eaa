package main

import (
	"github.com/spf13/cobra"

	"aipm/fsstore"
	"aipm/sim"
)

type simOptions struct {
	e      *env
	Agent  string
	Server []string // the MCP server's command line, after --
}

func newCmdSim(e *env) *cobra.Command {
	o := &simOptions{e: e}
	c := &cobra.Command{
		Use:   "sim [--agent ID] [-- SERVER-COMMAND...]",
		Short: "A simulated agent: an MCP client of aipm serve that follows get_next_action",
		Long: `Run a simulated AI agent, for trying aipm without a model and for tests: it
starts aipm serve, authenticates and does what get_next_action says. It
answers messages, plays a word chain (English: "word chain with AGENT") or
shiritori (kana: "shiritori with AGENT"; [N turns], [start with WORD]) when a
message or a delegation asks for it, accepts conversation requests,
works through a task (sim-steps=N in its description sets the steps), reports
blocked on an interrupt, and exits when told.

Its credential comes from the environment as aipm watch passes it:
AIPM_AGENT_ID (or --agent), AIPM_PASSKEY_FILE or AIPM_PASSKEY, and the
optional AIPM_PURPOSE. Use it as an agent's command in config.toml:
  command = ["aipm", "sim"]

After --, a command line replaces "aipm serve": the sim starts it as its
MCP server, as a client starts the entry it was given, and authenticates
without a passkey (that server holds the credential).`,
		Example: "  AIPM_PASSKEY=... aipm sim --agent coder\n  AIPM_PASSKEY_FILE=... aipm sim --agent coder -- aipm serve",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
				return usageError("sim takes no arguments before --: put the server's command line after --")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Server = args
			return simRun(cmd, o)
		},
	}
	c.Flags().StringVar(&o.Agent, "agent", "", "the agent to be (default $AIPM_AGENT_ID)")
	return c
}

func simRun(cmd *cobra.Command, o *simOptions) error {
	e := o.e
	agent := o.Agent
	if agent == "" {
		agent = e.getenv(fsstore.EnvAgentID)
	}
	if agent == "" {
		return usageError("sim: no agent: pass --agent ID or set AIPM_AGENT_ID")
	}
	passkey := e.getenv(fsstore.EnvPasskey)
	if len(o.Server) > 0 {
		passkey = "" // the server holds the credential, as a client's entry does
	} else if f := e.getenv(fsstore.EnvPasskeyFile); passkey == "" && f != "" {
		var err error
		if passkey, err = fsstore.ReadPasskeyFile(f); err != nil {
			return err
		}
	}
	if passkey == "" && len(o.Server) == 0 {
		return usageError("sim: no passkey: set AIPM_PASSKEY_FILE or AIPM_PASSKEY (aipm agent passkey %s --save writes the file aipm watch passes)", agent)
	}
	dir := e.getenv(fsstore.EnvProjectDir)
	if dir == "" || e.dir != "" {
		var err error
		if dir, err = e.findProject(); err != nil {
			return err
		}
	}
	exe, err := selfExe()
	if err != nil {
		return err
	}
	return sim.Run(cmd.Context(), sim.Options{
		Exe: exe, Server: o.Server, ProjectDir: dir, Agent: agent, Passkey: passkey, Purpose: e.getenv(fsstore.EnvPurpose),
		Out: e.stdout, ServeStderr: e.stderr,
	})
}
