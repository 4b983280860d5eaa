package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"aipm/fsstore"
	"aipm/internal/launch"
)

type agentAddOptions struct {
	e       *env
	Agent   fsstore.NewAgent
	Command string
	Client  clientFlags
	Save    bool
	JSON    bool
}

func newCmdAgentAdd(e *env, runF func(*agentAddOptions) error) *cobra.Command {
	o := &agentAddOptions{e: e}
	c := &cobra.Command{
		Use:   "add ID --type ai|human",
		Short: "Add an agent to config.toml (an AI agent's passkey is printed once)",
		Long: `Append an [[agents]] entry to .ai-pm/config.toml (comments and layout are kept).
For an AI agent, a new passkey is printed once; aipm keeps only its salted
hash. Give it to the agent's MCP server (see aipm mcp-config). Humans get no
passkey: they act through the CLI with --as ID.

--client claude or --client codex makes the agent a real client that aipm
watch starts headless when it has work (command = ["aipm", "launch",
"claude"]: see aipm launch --help): aipm's MCP server, hooks and tools, and
permission to edit files and run commands inside the project (--access
narrows or widens that). Its passkey is saved for aipm watch.

A passkey saved (--client, --save-passkey) is not printed: the file is what a
client is given (--json gives passkeyFile instead of passkey).`,
		Example: `  aipm agent add lead --type human --role manager --name "Project Lead"
  aipm agent add coder --type ai --parent lead --client claude
  aipm agent add reviewer --type ai --client codex --access read
  aipm agent add coder --type ai --json`,
		Args: argsExactly(1, "exactly one agent id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Agent.ID = args[0]
			if err := fsstore.CheckAgentID(o.Agent.ID); err != nil {
				return asUsage(err)
			}
			if !slices.Contains([]string{fsstore.AgentAI, fsstore.AgentHuman}, o.Agent.Type) {
				return usageError("agent add needs --type ai or --type human, got %q", o.Agent.Type)
			}
			if o.Client.set(cmd) {
				if o.Agent.Type != fsstore.AgentAI {
					return usageError("agent add: --client is for AI agents: humans act through the CLI")
				}
				if o.Command != "" {
					return usageError("agent add: give --client or --command, not both: --client writes the command")
				}
				spec, err := o.Client.spec(cmd, launch.Spec{})
				if err != nil {
					return err
				}
				o.Command, o.Save = "", true
				o.Agent.Command = spec.Command()
			}
			if runF != nil {
				return runF(o)
			}
			return agentAddRun(cmd, o)
		},
	}
	c.Flags().StringVar(&o.Agent.Type, "type", "", "ai or human (required)")
	c.Flags().StringVar(&o.Agent.Name, "name", "", "display name")
	c.Flags().StringVar(&o.Agent.Role, "role", "", "worker (default) or manager")
	c.Flags().StringVar(&o.Agent.Parent, "parent", "", "id of the agent this one answers to")
	c.Flags().StringVar(&o.Command, "command", "", "what aipm watch starts when the agent has work, split at spaces (edit config.toml for arguments with spaces)")
	c.Flags().BoolVar(&o.Save, "save-passkey", false, "also save the passkey in .ai-pm/credentials/ID.passkey (0600, not in git), so that aipm watch can start the agent")
	c.Flags().BoolVar(&o.JSON, "json", false, "print {id, type, passkey} as JSON ({id, type, passkeyFile} when it is saved)")
	o.Client.register(c)
	c.RegisterFlagCompletionFunc("type", cobra.FixedCompletions([]string{"ai", "human"}, cobra.ShellCompDirectiveNoFileComp))
	c.RegisterFlagCompletionFunc("role", cobra.FixedCompletions([]string{"worker", "manager"}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

func agentAddRun(cmd *cobra.Command, o *agentAddOptions) error {
	store, cfg, err := o.e.open()
	if err != nil {
		return err
	}
	a := o.Agent
	if a.Parent != "" {
		if err := agentRef(cfg, a.Parent, "--parent"); err != nil {
			return err
		}
	}
	if a.Role != "" && a.Role != fsstore.RoleWorker && a.Role != fsstore.RoleManager {
		return usageError("agent add: role %q is invalid: use worker or manager", a.Role)
	}
	if o.Command != "" {
		a.Command = strings.Fields(o.Command)
	}
	if len(a.Command) > 0 && a.Type != fsstore.AgentAI {
		return usageError("agent add: --command is for AI agents: humans act through the CLI")
	}
	if o.Save && a.Type != fsstore.AgentAI {
		return usageError("agent add: --save-passkey is for AI agents: humans have no passkey")
	}
	passkey, err := store.AddAgent(cmd.Context(), a)
	if err != nil {
		return err
	}
	saved := ""
	if o.Save {
		if saved, err = store.SaveCredential(a.ID, passkey); err != nil {
			return err
		}
	}
	if o.JSON {
		out := struct {
			ID          string `json:"id"`
			Type        string `json:"type"`
			Passkey     string `json:"passkey,omitempty"`
			PasskeyFile string `json:"passkeyFile,omitempty"`
		}{ID: a.ID, Type: a.Type, Passkey: map[bool]string{true: passkey}[saved == ""], PasskeyFile: store.Rel(saved)}
		return writeJSON(o.e.stdout, out)
	}
	w := o.e.stdout
	fmt.Fprintf(w, "added %s agent %s\n", a.Type, a.ID)
	if passkey == "" {
		fmt.Fprintf(w, "humans need no passkey: act as %s with --as %s (or AIPM_AS=%s)\n", a.ID, a.ID, a.ID)
		return nil
	}
	printNewPasskey(w, a.ID, passkey, store.Rel(saved), saved != "")
	if starts, may := launch.Starts(fsstore.Agent{ID: a.ID, Command: a.Command}); starts != "" && may != "" {
		fmt.Fprintf(w, "aipm watch starts %s as %s when it has work; it may %s\n", starts, a.ID, may)
	}
	launch.WarnMissing(o.e.stderr, o.e.getenv("PATH"), fsstore.Agent{ID: a.ID, Command: a.Command})
	launch.WarnRoot(o.e.stderr, o.e.host(), fsstore.Agent{ID: a.ID, Command: a.Command})
	return nil
}

// printNewPasskey says an AI agent's new passkey: printed once, or, saved
// (in rel), never (scrollback, screen shares, CI logs).
func printNewPasskey(w io.Writer, id, passkey, rel string, saved bool) {
	if !saved {
		fmt.Fprintf(w, "passkey: %s\n", passkey)
		fmt.Fprintln(w, "(shown once; aipm stores only its hash: aipm agent passkey issues a new one)")
		return
	}
	fmt.Fprintf(w, "passkey: saved, not printed (aipm keeps only its hash; aipm agent passkey %s issues a new one)\n", id)
	fmt.Fprintf(w, "saved for aipm watch in %s\n", rel)
}
