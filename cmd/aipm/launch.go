package main

import (
	"context"
	"errors"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"aipm/fsstore"
	"aipm/internal/clients"
	"aipm/internal/launch"
)

func newCmdLaunch(e *env) *cobra.Command {
	var spec launch.Spec
	c := &cobra.Command{
		Use:   "launch " + strings.Join(clients.Names(), "|") + " [--model M] [--access read|project|full] [-- CLIENT-ARGS...]",
		Short: "Start an agent CLI (Claude Code, Codex, Gemini CLI, OpenCode, ...) headless as an aipm agent (the command aipm agent add --client writes)",
		Long: `Start a real client headless as one agent of this project: what aipm watch
runs for an agent added with aipm agent add ID --type ai --client CLIENT
(` + clients.Known("") + `). The client gets aipm's MCP server (this aipm, connected before its first
turn: Claude Code's alwaysLoad, which also hands the model aipm's tools
whole; Codex's required), aipm's hooks, aipm's tools allowed without a
prompt (also in a folder it never trusted), the agent's access as its
permissions (Claude Code: acceptEdits and its Bash sandbox; Codex: the
workspace-write sandbox), and an opening prompt naming the agent, the
project and the aipm loop. The credential stays in the environment:
AIPM_PASSKEY_FILE, or the passkey saved by aipm agent passkey ID --save. The
user's own client settings are not touched.

--access: read (read the project; no edit, no command; Codex runs commands
that do not write), project (the default: edit files and run commands
inside the project), full (do anything, without asking). Arguments after --
go to the client as they are. Claude Code refuses full to root: aipm launch
then does not start it, and says why with the fixes.

When the client refused tool calls (Claude Code's permission_denials;
Codex's sandbox refusing a patch or a command's write, read from its
session record under $CODEX_HOME/sessions), the agent's human (its parent,
else the project's humans) gets a system message naming them, with the fix:
a task reported done by an agent whose edits were refused is not a silent
success. The calls aipm's own hook denied (while an interrupt waits, a
write under another's lease) are aipm's rules at work: one line of the
run's log says them, and nobody is told to widen anything.

Gemini CLI, OpenCode, Qwen Code and GitHub Copilot CLI get the same, in
their own terms (docs/concepts.md, "Agents that are real clients", says how
each is started, what each access level means to it and what it cannot do).`,
		Example: `  AIPM_AGENT_ID=coder aipm launch claude
  aipm launch codex --agent coder --model gpt-5-codex
  aipm launch claude --agent coder --access read -- --max-turns 50`,
		Args: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			if dash < 0 {
				dash = len(args)
			}
			if dash != 1 {
				return usageError("launch needs exactly one client before --: %s", clients.Known(""))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			spec.Client, spec.Extra = args[0], args[1:]
			if err := spec.Check(); err != nil {
				return asUsage(err)
			}
			return launchRun(cmd.Context(), e, spec)
		},
	}
	c.Flags().AddFlagSet(launch.Flags(&spec))
	c.RegisterFlagCompletionFunc("access", cobra.FixedCompletions(launch.AccessLevels, cobra.ShellCompDirectiveNoFileComp))
	c.ValidArgs = clients.Names()
	return c
}

// launchRun checks the agent and starts its client (launch.Run); a client
// that fails makes aipm launch exit with the client's code.
func launchRun(ctx context.Context, e *env, spec launch.Spec) error {
	agent := spec.Agent
	if agent == "" {
		agent = e.getenv(fsstore.EnvAgentID)
	}
	if agent == "" {
		return usageError("launch: no agent: pass --agent ID or set AIPM_AGENT_ID (aipm watch sets it)")
	}
	store, cfg, err := e.open()
	if err != nil {
		return err
	}
	if err := agentRef(cfg, agent, "--agent"); err != nil {
		return err
	}
	if err := aiAgent(cfg, agent, "humans act through the aipm commands with --as "+agent); err != nil {
		return err
	}
	err = launch.Run(ctx, launch.Options{Store: store, Config: cfg, Agent: agent, Spec: spec,
		Getenv: e.getenv, Stdout: e.stdout, Stderr: e.stderr, Root: e.root})
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code := ee.ExitCode()
		if code < 0 {
			code = exitFailed // ended by a signal
		}
		return &exitError{code: code, err: err}
	}
	return err
}
