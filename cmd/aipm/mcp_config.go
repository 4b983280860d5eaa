package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"aipm/fsstore"
	"aipm/internal/clientconfig"
	"aipm/internal/clients"
	"aipm/internal/remote"
)

type mcpConfigOptions struct {
	e       *env
	Client  string // claude or codex
	Agent   string
	KeyFile string
	Write   bool
	URL     string // an aipm serve --http endpoint (clientconfig/url.go)
	Remote  string // HOST[:PATH]: the entry reaches the project there over ssh
}

func newCmdMCPConfig(e *env) *cobra.Command {
	names := clients.Names()
	o := &mcpConfigOptions{e: e}
	c := &cobra.Command{
		Use:   "mcp-config " + strings.Join(names, "|") + " [--write]",
		Short: "Write or print the MCP server entry that starts aipm serve for this project",
		Long: `Set up an agent's CLI to start aipm serve for this project and run aipm's
hooks.

With --write, merge the entries into the project's own files, keeping what
else they hold: for claude, the aipm server in .mcp.json, and in
.claude/settings.json the server enabled (enabledMcpjsonServers), its tools
allowed (permissions.allow: mcp__aipm) and aipm's hooks (hooks: aipm hook on
SessionStart, UserPromptSubmit, PreToolUse, PostToolUse and Stop); for codex,
the [mcp_servers.aipm] table in .codex/config.toml and aipm's hooks in
.codex/hooks.json. Other hooks stay; aipm's own (a command "aipm hook ...")
are replaced where they stand. --write changes every file it names or none:
each new content is written beside its file first, then all are renamed
into place. A second --write changes nothing and says so.

Both clients ignore a project's files until the user trusts it: Claude Code
applies .claude/settings.json only in a folder whose trust dialog was
accepted (recorded in ~/.claude.json, or $CLAUDE_CONFIG_DIR/.claude.json),
else claude -p refuses every aipm tool; Codex reads .codex/ only in a
project its config ($CODEX_HOME/config.toml, default ~/.codex/config.toml)
trusts, else codex exec runs without aipm's tools and hooks, and it runs a
hook only once that hook is trusted with /hooks in codex. After writing,
--write warns, as aipm doctor does, when those files do not trust the
project, with the command that fixes it.

Without --write, print the one document (the .mcp.json JSON for claude, the
TOML table for codex) on stdout and what to do with it on stderr.

The entries run "aipm serve" and "aipm hook" with no path: "aipm" when the
aipm on PATH is found (else this binary's absolute path, with a warning), and
no --dir, since clients start them in the project and aipm finds it from
there. The agent's credential comes from AIPM_AGENT_ID and AIPM_PASSKEY_FILE
in the client's environment, unless --agent and --passkey-file pin one for
the server (the hooks always take it from the client's environment).

With --remote HOST[:PATH] --agent ID, the entry is for an agent on another
machine than the project's: it runs ssh -T HOST aipm --dir PATH serve
--agent ID (ssh from $AIPM_SSH_COMMAND, with keep-alives), and aipm serve
there holds the passkey saved there (aipm agent passkey ID --save), so the
entry holds no secret. It has no hooks (aipm hook needs the project's
.ai-pm/ on the machine it runs on), and --write needs no project here: it
merges into the files of the working directory (or --dir).

With --url URL, the entry is for aipm serve --http at URL (MCP's streamable
HTTP): the client sends the agent's passkey from its own environment
($AIPM_PASSKEY) as the bearer token, and the server takes the agent from it.
It is printed only, with no hooks.`,
		Example:   "  aipm mcp-config claude --write\n  aipm mcp-config codex --write\n  aipm mcp-config claude > .mcp.json\n  aipm mcp-config claude --remote home:/srv/project --agent coder --write\n  aipm mcp-config codex --url https://home:8443/mcp",
		ValidArgs: names,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError("mcp-config needs a client: aipm mcp-config %s", strings.Join(names, "|"))
			}
			if _, ok := clients.Get(args[0]); !ok {
				return usageError("mcp-config: unknown client %q: use %s", args[0], clients.Known(""))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Client = args[0]
			return mcpConfigRun(o)
		},
	}
	c.Flags().BoolVar(&o.Write, "write", false, "merge the entry into the project's config files instead of printing it")
	c.Flags().StringVar(&o.Agent, "agent", "", "pin the server to this AI agent's credential (with --passkey-file)")
	c.Flags().StringVar(&o.KeyFile, "passkey-file", "", "with --agent: the 0600 file holding its passkey")
	c.Flags().StringVar(&o.URL, "url", "", "print the entry for aipm serve --http at this URL (the passkey from the client's $AIPM_PASSKEY)")
	c.Flags().StringVar(&o.Remote, "remote", "", "HOST[:PATH]: an entry that runs aipm serve --agent on that machine over ssh (needs --agent)")
	return c
}

// mcpConfigRun prints or writes the MCP config that starts aipm serve for
// the project (entry), or prints the entry for aipm serve --http at --url.
func mcpConfigRun(o *mcpConfigOptions) error {
	e := o.e
	switch {
	case o.URL != "" && o.Remote != "":
		return usageError("mcp-config: --url and --remote are two ways to reach the home machine (HTTP and ssh): give one")
	case o.URL != "" && (o.Agent != "" || o.KeyFile != ""):
		return usageError("mcp-config: --url takes the agent from the bearer token: leave out --agent and --passkey-file")
	case o.URL != "" && o.Write:
		return usageError("mcp-config: --url prints the entry only: save it into the client's config yourself (--write is for the stdio entry)")
	case o.URL != "":
		if err := clientconfig.CheckURL(o.URL); err != nil {
			return asUsage(err)
		}
		out, note, err := clientconfig.URLDoc(o.Client, o.URL, mustClient(o.Client).Config.URLDoc)
		if err != nil {
			return fmt.Errorf("mcp-config %s --url: %w", o.Client, err)
		}
		fmt.Fprint(e.stderr, note)
		_, err = e.stdout.Write(out)
		return err
	}
	srv, dir, note, err := o.entry()
	if err != nil {
		return err
	}
	client := mustClient(o.Client).Config
	if !o.Write {
		out, err := client.Doc(srv)
		if err != nil {
			return fmt.Errorf("mcp-config %s: %w", o.Client, err)
		}
		fmt.Fprint(e.stderr, note)
		_, err = e.stdout.Write(out)
		return err
	}
	if err := clientconfig.Write(e.stdout, o.Client, dir, srv, client.Write); err != nil {
		return err
	}
	warn(e, mustClient(o.Client).Trust(e.getenv, dir))
	return nil
}

// entry is the stdio entry mcp-config prints or writes, the directory
// whose files --write merges it into, and what to say on stderr beside the
// printed document. With --remote, it is the entry for an agent on this
// machine that reaches the project on another one over ssh: no aipm hooks
// (they run aipm hook here, which needs the project's .ai-pm/; without them
// an interrupt still reaches the agent at its next aipm call), and --write
// needs no project here: it merges into the files of --dir, else of the
// working directory (the checkout the agent's CLI starts in).
func (o *mcpConfigOptions) entry() (srv clientconfig.Server, dir, note string, err error) {
	e := o.e
	if o.Remote == "" {
		if (o.Agent == "") != (o.KeyFile == "") {
			return srv, "", "", usageError("mcp-config: --agent and --passkey-file go together: give both, or neither to take the credential from the client's environment (see aipm mcp-config --help)")
		}
		store, cfg, err := e.open()
		if err != nil {
			return srv, "", "", err
		}
		var pinned map[string]string
		if o.Agent != "" {
			if pinned, err = pinnedCredential(cfg, o.Agent, o.KeyFile); err != nil {
				return srv, "", "", err
			}
		}
		srv = clientconfig.Server{Command: clientconfig.AipmCommand(e.getenv("PATH"), e.stderr), Args: clientconfig.ServeArgs, Env: pinned, ToolTimeoutSec: 60, ApprovalMode: "approve"}
		srv.HookCommand = clientconfig.HookWord(e.getenv("PATH"), srv.Command)
		return srv, store.ProjectDir(), mustClient(o.Client).Config.Note(srv), nil
	}
	switch {
	case o.Agent == "":
		return srv, "", "", usageError("mcp-config --remote needs --agent ID: aipm serve on the home machine holds that agent's saved passkey, so the entry carries no secret")
	case o.KeyFile != "":
		return srv, "", "", usageError("mcp-config --remote takes no --passkey-file: the passkey stays on the home machine (aipm agent passkey %s --save there)", o.Agent)
	}
	if err := fsstore.CheckAgentID(o.Agent); err != nil {
		return srv, "", "", usageError("mcp-config: --agent: %v", err)
	}
	t, err := remote.Parse(o.Remote)
	if err != nil {
		return srv, "", "", asUsage(err)
	}
	there := ""
	if t.Dir != "" {
		there = remote.Path(t.Dir)
	}
	srv = clientconfig.RemoteServer(remote.SSHProgram(e.getenv), t.Host, there, o.Agent)
	fmt.Fprintf(e.stderr, "aipm: no hooks in a remote entry: aipm hook needs the project's .ai-pm/ on this machine; an interrupt reaches %s at its next aipm call\n", o.Agent)
	note = fmt.Sprintf("aipm: the entry runs aipm serve on %s for agent %s, whose passkey must be saved there (aipm agent passkey %s --save); --write merges it into this directory's files\n", t.Host, o.Agent, o.Agent)
	if !o.Write {
		return srv, "", note, nil
	}
	if dir = e.dir; dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return srv, "", "", fmt.Errorf("mcp-config --write: %w", err)
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return srv, "", "", fmt.Errorf("mcp-config --write: %w", err)
	}
	return srv, dir, note, nil
}

// pinnedCredential is the environment that pins the server to agent: it
// must be an AI agent of the project and keyFile must exist.
func pinnedCredential(cfg *fsstore.Config, agent, keyFile string) (map[string]string, error) {
	if err := fsstore.CheckAgentID(agent); err != nil {
		return nil, usageError("mcp-config: --agent: %v", err)
	}
	if err := agentRef(cfg, agent, "--agent"); err != nil {
		return nil, err
	}
	if err := aiAgent(cfg, agent, "humans need no MCP server; they use the aipm commands with --as "+agent); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(keyFile)
	if err != nil {
		return nil, fmt.Errorf("mcp-config: --passkey-file: %w", err)
	}
	if fi, err := os.Stat(abs); err != nil || fi.IsDir() {
		return nil, usageError("mcp-config: --passkey-file %s is not a file: save %s's passkey there first (aipm agent passkey %s prints a new one)", keyFile, agent, agent)
	}
	return map[string]string{fsstore.EnvAgentID: agent, fsstore.EnvPasskeyFile: abs}, nil
}

// mustClient is the registered client name, which the command's
// arguments were checked to be (clients.Get).
func mustClient(name string) clients.Client {
	c, ok := clients.Get(name)
	if !ok {
		panic("aipm: unchecked client " + name)
	}
	return c
}
