package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"

	"aipm/fsstore"
	"aipm/fsstore/storage"
)

// mcpServer is how an MCP client starts `aipm serve` for one project.
type mcpServer struct {
	Command        string            `json:"command" toml:"command"`
	Args           []string          `json:"args" toml:"args"`
	Env            map[string]string `json:"env,omitempty" toml:"env,omitempty"`
	EnvVars        []string          `json:"-" toml:"env_vars,omitempty"`
	ToolTimeoutSec int               `json:"-" toml:"tool_timeout_sec"`
	// ApprovalMode "approve": Codex runs aipm's tools without asking, which
	// `codex exec` (approval policy never) needs to call any tool that writes.
	ApprovalMode string `json:"-" toml:"default_tools_approval_mode"`
	// HookCommand is the command word of aipm's client hooks (hookWord).
	HookCommand string `json:"-" toml:"-"`
	// Remote: the entry runs ssh to the home machine (mcp-config --remote),
	// with no credential variables and no hooks.
	Remote bool `json:"-" toml:"-"`
}

// serverName is the name of aipm's entry in every client's config; Claude
// Code names its tools mcp__aipm__<tool>.
const serverName = "aipm"

// serveArgs start the server with no --dir: clients start it in the
// project (or one of its directories), and aipm serve finds the project
// like every aipm command, so the entry holds no path and survives a
// clone or a move.
var serveArgs = []string{"serve"}

// credentialVars are what aipm serve reads its agent's credential from
// (aipm watch's starter sets AIPM_PASSKEY_FILE; AIPM_PASSKEY is accepted
// for other launchers).
var credentialVars = []string{fsstore.EnvAgentID, fsstore.EnvPasskeyFile, fsstore.EnvPasskey}

// mcpClient is what mcp-config knows of one client: the one document it
// prints, what it says about it on stderr, and how --write merges the
// entry into the project's files.
type mcpClient struct {
	doc   func(mcpServer) ([]byte, error)
	note  func(mcpServer) string
	write func(project string, s mcpServer) ([]fileChange, error)
	// written, when set, runs after write (what the user must still do).
	written func(e *env, project string)
}

// mcpClients are the clients mcp-config knows, by name.
var mcpClients = map[string]mcpClient{
	"claude": {doc: claudeConfig, note: claudeNote, write: claudeWrite, written: warnClaude},
	"codex":  {doc: codexConfig, note: codexNote, write: codexWrite, written: warnCodex},
}

type mcpConfigOptions struct {
	e       *env
	Client  string // claude or codex
	Agent   string
	KeyFile string
	Write   bool
	URL     string // an aipm serve --http endpoint (mcp_config_url.go)
	Remote  string // HOST[:PATH]: the entry reaches the project there over ssh
}

func newCmdMCPConfig(e *env) *cobra.Command {
	names := make([]string, 0, len(mcpClients))
	for name := range mcpClients {
		names = append(names, name)
	}
	slices.Sort(names)
	o := &mcpConfigOptions{e: e}
	c := &cobra.Command{
		Use:   "mcp-config claude|codex [--write]",
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
				return usageError("mcp-config needs a client: aipm mcp-config claude|codex")
			}
			if _, ok := mcpClients[args[0]]; !ok {
				return usageError("mcp-config: unknown client %q: use claude or codex", args[0])
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
// the project.
func mcpConfigRun(o *mcpConfigOptions) error {
	e := o.e
	if o.URL != "" && o.Remote != "" {
		return usageError("mcp-config: --url and --remote are two ways to reach the home machine (HTTP and ssh): give one")
	}
	if o.URL != "" {
		return mcpConfigURL(o)
	}
	if o.Remote != "" {
		return mcpConfigRemote(o)
	}
	if (o.Agent == "") != (o.KeyFile == "") {
		return usageError("mcp-config: --agent and --passkey-file go together: give both, or neither to take the credential from the client's environment (see aipm mcp-config --help)")
	}
	store, cfg, err := e.open()
	if err != nil {
		return err
	}
	var pinned map[string]string
	if o.Agent != "" {
		if pinned, err = pinnedCredential(cfg, o.Agent, o.KeyFile); err != nil {
			return err
		}
	}
	srv := mcpServer{Command: aipmCommand(e), Args: serveArgs, Env: pinned, ToolTimeoutSec: 60, ApprovalMode: "approve"}
	srv.HookCommand = hookWord(e, srv.Command)
	client := mcpClients[o.Client]
	if !o.Write {
		out, err := client.doc(srv)
		if err != nil {
			return fmt.Errorf("mcp-config %s: %w", o.Client, err)
		}
		fmt.Fprint(e.stderr, client.note(srv))
		_, err = e.stdout.Write(out)
		return err
	}
	if err := writeFiles(e, o.Client, store.ProjectDir(), srv); err != nil {
		return err
	}
	if client.written != nil {
		client.written(e, store.ProjectDir())
	}
	return nil
}

// pinnedCredential is the environment that pins the server to agent: it
// must be an AI agent of the project and keyFile must exist.
func pinnedCredential(cfg *storage.Config, agent, keyFile string) (map[string]string, error) {
	if err := storage.CheckAgentID(agent); err != nil {
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

// aipmCommand is the command word of the entries mcp-config makes (the
// server's command and the hooks' "<word> hook ..."): "aipm" when an aipm
// is on PATH, so that the entries hold no path of this machine (warning
// when that aipm is not this binary: the client will start the one on
// PATH); else this binary's absolute path, with a warning.
func aipmCommand(e *env) string {
	exe, err := os.Executable()
	if err == nil {
		if resolved, err := filepath.EvalSymlinks(exe); err == nil {
			exe = resolved
		}
	}
	onPath := lookPath(e.getenv("PATH"), serverName)
	switch {
	case onPath != "" && exe != "" && !sameFile(onPath, exe):
		fmt.Fprintf(e.stderr, "aipm: warning: the entries start the aipm on PATH, %s, which is not this binary (%s)\n", onPath, exe)
		return serverName
	case onPath != "":
		return serverName
	case exe == "":
		fmt.Fprintf(e.stderr, "aipm: warning: aipm is not on PATH and this binary's path is unknown (%v): put aipm on PATH\n", err)
		return serverName
	case strings.Contains(exe, string(filepath.Separator)+"go-build"):
		fmt.Fprintf(e.stderr, "aipm: warning: %s is a temporary build (go run): install aipm with go install and run mcp-config again\n", exe)
	default:
		fmt.Fprintf(e.stderr, "aipm: warning: aipm is not on PATH, so the entries name %s, which break if the binary moves: put aipm on PATH and run mcp-config again\n", exe)
	}
	return exe
}

// claudeServer is the entry for Claude Code: without a pinned credential,
// the credential variables expanded from Claude Code's environment
// (${VAR:-} is empty when unset).
func claudeServer(s mcpServer) mcpServer {
	if s.Env == nil && !s.Remote {
		s.Env = map[string]string{}
		for _, v := range credentialVars {
			s.Env[v] = "${" + v + ":-}"
		}
	}
	return s
}

// claudeConfig is the .mcp.json document for Claude Code.
func claudeConfig(s mcpServer) ([]byte, error) {
	var buf bytes.Buffer
	err := writeJSON(&buf, map[string]map[string]mcpServer{"mcpServers": {serverName: claudeServer(s)}})
	return buf.Bytes(), err
}

// claudeSettings are the .claude/settings.json keys that let Claude Code
// start the project's server without asking and claude -p call its tools.
const claudeSettingsDoc = `{"enabledMcpjsonServers": ["aipm"], "permissions": {"allow": ["mcp__aipm"]}}`

func claudeNote(s mcpServer) string {
	var b strings.Builder
	b.WriteString("aipm: stdout is the .mcp.json document for the project root; aipm mcp-config claude --write merges it\n" +
		"into .mcp.json and enables the server in .claude/settings.json, keeping what else they hold.\n" +
		"The settings .claude/settings.json needs (claude -p asks nothing): " + claudeSettingsDoc + "\n" +
		"--write also merges aipm's hooks (" + hookCommand(s.HookCommand, "claude") + " on " + hookEventNames(claudeHookEvents(s.HookCommand)) + ")\n" +
		"into .claude/settings.json's \"hooks\", so that an interrupt reaches a model that is not calling aipm.\n")
	if s.Env == nil {
		b.WriteString("aipm serve takes the agent's credential from Claude Code's environment, so the passkey never\n" +
			"reaches the model: AIPM_AGENT_ID=coder AIPM_PASSKEY_FILE=$HOME/.config/aipm/coder.key claude\n")
	} else {
		b.WriteString("This entry is for agent " + s.Env[fsstore.EnvAgentID] + " only: use it as .mcp.json or with claude --mcp-config FILE.\n")
	}
	return b.String()
}

// codexTable is the [mcp_servers.aipm] table (and its env subtable) for
// Codex CLI's config.toml.
func codexTable(s mcpServer) ([]byte, error) {
	var buf bytes.Buffer
	if s.Env == nil && !s.Remote {
		s.EnvVars = credentialVars
	}
	env := s.Env
	s.Env = nil
	buf.WriteString("[mcp_servers." + serverName + "]\n")
	if err := toml.NewEncoder(&buf).Encode(s); err != nil {
		return nil, err
	}
	if env != nil {
		buf.WriteString("\n[mcp_servers." + serverName + ".env]\n")
		if err := toml.NewEncoder(&buf).Encode(env); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// codexConfig is the TOML document for Codex: the table alone.
func codexConfig(s mcpServer) ([]byte, error) { return codexTable(s) }

func codexNote(s mcpServer) string {
	var b strings.Builder
	b.WriteString("aipm: stdout is aipm's table for the project's .codex/config.toml (Codex reads it in a trusted\n" +
		"project) or ~/.codex/config.toml; aipm mcp-config codex --write merges it into .codex/config.toml,\n" +
		"and aipm's hooks (" + hookCommand(s.HookCommand, "codex") + " on " + hookEventNames(codexHookEvents(s.HookCommand)) + ")\n" +
		"into .codex/hooks.json. Codex runs a project's hooks only once trusted (/hooks in codex), else\n" +
		"skips them silently; aipm doctor says whether they are.\n")
	if s.Env == nil {
		b.WriteString("Codex passes AIPM_AGENT_ID and AIPM_PASSKEY_FILE from its environment to aipm serve, so the\n" +
			"passkey never reaches the model: AIPM_AGENT_ID=coder AIPM_PASSKEY_FILE=$HOME/.config/aipm/coder.key codex\n")
	} else {
		b.WriteString("This entry is for agent " + s.Env[fsstore.EnvAgentID] + " only.\n")
	}
	return b.String()
}

// fileChange is what --write does to one file: its path and a sentence,
// or an empty what when the file already holds the entry; old and data
// are its content before and after (old nil when it is created).
type fileChange struct {
	path    string // absolute
	name    string // relative to the project, for messages
	created bool
	what    string
	old     []byte
	data    []byte
}

// printChanges says what --write changed, file by file, with paths
// relative to the working directory when they are below it.
func printChanges(e *env, project string, changes []fileChange) error {
	wd, _ := os.Getwd()
	var out bytes.Buffer
	changed := false
	for _, c := range changes {
		path := c.path
		if rel, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(rel, "..") {
			path = rel
		}
		switch {
		case c.what == "":
			fmt.Fprintf(&out, "unchanged %s: it already holds aipm's entry\n", path)
		case c.created:
			changed = true
			fmt.Fprintf(&out, "created %s: %s\n", path, c.what)
		default:
			changed = true
			fmt.Fprintf(&out, "updated %s: %s\n", path, c.what)
		}
	}
	if !changed {
		fmt.Fprintf(&out, "nothing to change: %s is already set up\n", filepath.Base(project))
	}
	_, err := io.Copy(e.stdout, &out)
	return err
}

// readOptional reads path; a missing file is empty.
func readOptional(path string) ([]byte, bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	return data, err == nil, err
}

// mcpConfigURL prints the entry for an aipm serve --http endpoint.
func mcpConfigURL(o *mcpConfigOptions) error {
	switch {
	case o.Agent != "" || o.KeyFile != "":
		return usageError("mcp-config: --url takes the agent from the bearer token: leave out --agent and --passkey-file")
	case o.Write:
		return usageError("mcp-config: --url prints the entry only: save it into the client's config yourself (--write is for the stdio entry)")
	}
	if err := checkURL(o.URL); err != nil {
		return err
	}
	out, note, err := urlDoc(o.Client, o.URL)
	if err != nil {
		return fmt.Errorf("mcp-config %s --url: %w", o.Client, err)
	}
	fmt.Fprint(o.e.stderr, note)
	_, err = o.e.stdout.Write(out)
	return err
}
