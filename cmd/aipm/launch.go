package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"aipm/fsstore"
	"aipm/fsstore/storage"
)

// An agent that is a real client (DESIGN 19) has the command
//
//	command = ["aipm", "launch", "claude"]
//
// in config.toml, with options after the client's name (--model, --access,
// and the client's own arguments after --). aipm watch runs it like any
// command; aipm launch starts the client headless with everything it needs:
// aipm's MCP entry, the hooks, the permissions aipm's tools and the agent's
// work need, and an opening prompt. The credential stays in the
// environment (AIPM_PASSKEY_FILE, the saved passkey), never on a command
// line or in the prompt. Nothing is written to the client's own settings.

// Access levels: what a launched client may do beyond aipm's tools.
const (
	accessRead    = "read"    // read the project; no edit, no command
	accessProject = "project" // edit files and run commands inside the project
	accessFull    = "full"    // everything, without asking
)

var accessLevels = []string{accessRead, accessProject, accessFull}

// launchSpec is what an "aipm launch" command line says.
type launchSpec struct {
	Client string   // claude or codex
	Model  string   // the client's --model, "" for its default
	Access string   // accessRead, accessProject (default) or accessFull
	Agent  string   // --agent; "" takes $AIPM_AGENT_ID
	Extra  []string // the client's own arguments, after --
}

// launchFlags are aipm launch's flags, bound to spec: the command and
// launchSpecOf parse a command line with the same set.
func launchFlags(spec *launchSpec) *pflag.FlagSet {
	fs := pflag.NewFlagSet("launch", pflag.ContinueOnError)
	fs.StringVar(&spec.Model, "model", "", "the client's model (its --model); default: the client's own")
	fs.StringVar(&spec.Access, "access", accessProject, "what the agent may do: read (the project, no edit or command), project (edit files and run commands inside the project), full (anything, without asking)")
	fs.StringVar(&spec.Agent, "agent", "", "the agent to start (default $AIPM_AGENT_ID, as aipm watch sets it)")
	return fs
}

// launchSpecOf reads an agent's command: ok is false when it is not
// "aipm launch ..." (any path to aipm counts); err says what is wrong
// with one that is.
func launchSpecOf(command []string) (spec launchSpec, ok bool, err error) {
	if len(command) < 2 || filepath.Base(command[0]) != serverName || command[1] != "launch" {
		return launchSpec{}, false, nil
	}
	fs := launchFlags(&spec)
	fs.SetOutput(nopWriter{})
	rest := command[2:]
	if err := fs.Parse(rest); err != nil {
		return spec, true, fmt.Errorf("aipm launch: %v", err)
	}
	args := fs.Args()
	dash := fs.ArgsLenAtDash()
	if dash < 0 {
		dash = len(args)
	}
	if dash != 1 {
		return spec, true, fmt.Errorf("aipm launch needs exactly one client before --, claude or codex (got %q)", args[:dash])
	}
	spec.Client, spec.Extra = args[0], args[dash:]
	return spec, true, spec.check()
}

// check says what is wrong with spec, in one sentence.
func (spec launchSpec) check() error {
	if _, ok := launchClients[spec.Client]; !ok {
		return fmt.Errorf("aipm launch: client %q is unknown: use claude or codex", spec.Client)
	}
	if !slices.Contains(accessLevels, spec.Access) {
		return fmt.Errorf("aipm launch: --access %q is unknown: use read, project or full", spec.Access)
	}
	return nil
}

// command is spec as an agent's command in config.toml: only what differs
// from the defaults, so that it reads short.
func (spec launchSpec) command() []string {
	cmd := []string{serverName, "launch", spec.Client}
	if spec.Model != "" {
		cmd = append(cmd, "--model", spec.Model)
	}
	if spec.Access != "" && spec.Access != accessProject {
		cmd = append(cmd, "--access", spec.Access)
	}
	if len(spec.Extra) > 0 {
		cmd = append(append(cmd, "--"), spec.Extra...)
	}
	return cmd
}

// may is what an agent launched with spec may do, for agent list and doctor.
func (spec launchSpec) may() string {
	switch spec.Access {
	case accessRead:
		return "read the project; no edit, no command"
	case accessFull:
		return "anything, without asking"
	}
	return "edit files and run commands inside the project"
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

// launchClient is what aipm knows of starting one client headless.
type launchClient struct {
	program string // the executable looked up on PATH
	install string // how to get it, for the sentence when it is missing
	// argv is the client's command line (without the program): exe is
	// this aipm's absolute path (the MCP server and the hooks run it).
	argv func(spec launchSpec, exe, hookWord, prompt string) []string
	// finish reads the client's stdout (captured when set) after it exits:
	// what it prints for the run's log, and the tool calls it refused.
	finish func(stdout []byte) (text string, refused []string)
}

var launchClients = map[string]launchClient{
	"claude": {program: "claude", install: "install Claude Code (npm install -g @anthropic-ai/claude-code)", argv: claudeLaunchArgs, finish: claudeFinish},
	"codex":  {program: "codex", install: "install Codex CLI (npm install -g @openai/codex)", argv: codexLaunchArgs},
}

// clientMissing is the one sentence for a client that is not on PATH, or
// "" when it is there.
func clientMissing(path string, spec launchSpec) string {
	c := launchClients[spec.Client]
	if c.program == "" || lookPath(path, c.program) != "" {
		return ""
	}
	return fmt.Sprintf("%s is not on PATH, so aipm watch cannot start this agent: %s, or put it on the PATH aipm watch runs with", c.program, c.install)
}

// launchPrompt is the opening prompt: who the agent is, where, and the
// aipm loop. It names no secret.
func launchPrompt(spec launchSpec, agent, project, dir, purpose string) string {
	tool := func(name string) string { return name }
	if spec.Client == "claude" {
		tool = func(name string) string { return "mcp__" + serverName + "__" + name }
	}
	var b strings.Builder
	fmt.Fprintf(&b, "You are %s, an AI agent of the aipm project %q in %s", agent, project, dir)
	if purpose != "" {
		fmt.Fprintf(&b, ", started for your %s session", purpose)
	}
	fmt.Fprintf(&b, ". aipm coordinates your team through its MCP server %q. Call %s with agent_id %q (no passkey: the server holds it), "+
		"then call %s and do exactly what its instruction says, again and again, until it says exit. "+
		"Do the work itself with your own tools in this project; say what you did in the reports aipm asks for.",
		serverName, tool("authenticate"), agent, tool("get_next_action"))
	return b.String()
}

// claudeLaunchArgs: claude -p, aipm's server alone (--strict-mcp-config),
// the hooks and the sandbox in --settings, aipm's tools allowed on the
// command line (which a folder never trusted requires), and the access
// level as a permission mode.
func claudeLaunchArgs(spec launchSpec, exe, hookWord, prompt string) []string {
	mcp, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{serverName: map[string]any{"command": exe, "args": serveArgs}}})
	// {"hooks": ...}, as mcp-config writes them, and the sandbox.
	var settings map[string]json.RawMessage
	hooks, _ := hooksDocument(claudeHookEvents(hookWord))
	json.Unmarshal(hooks, &settings)
	mode := "default"
	switch spec.Access {
	case accessProject:
		// Edits inside the working directory without asking; Bash in
		// Claude Code's sandbox, which may write only there.
		mode = "acceptEdits"
		settings["sandbox"] = json.RawMessage(`{"enabled":true,"autoAllowBashIfSandboxed":true,"allowUnsandboxedCommands":false}`)
	case accessFull:
		mode = "bypassPermissions"
	}
	s, _ := json.Marshal(settings)
	args := []string{"-p", prompt,
		"--mcp-config", string(mcp), "--strict-mcp-config",
		"--settings", string(s),
		"--allowedTools", "mcp__" + serverName,
		"--permission-mode", mode,
		"--output-format", "json",
	}
	if spec.Model != "" {
		args = append(args, "--model", spec.Model)
	}
	return append(args, spec.Extra...)
}

// claudeFinish reads claude -p's JSON result: its text for the log and
// the tools whose calls were refused (permission_denials).
func claudeFinish(stdout []byte) (string, []string) {
	var r struct {
		Result  string `json:"result"`
		Denials []struct {
			Tool string `json:"tool_name"`
		} `json:"permission_denials"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout), &r); err != nil {
		return string(stdout), nil // not the JSON result: pass it on as it is
	}
	var refused []string
	for _, d := range r.Denials {
		refused = append(refused, d.Tool)
	}
	return r.Result + "\n", refused
}

// codexLaunchArgs: codex exec with aipm's server and hooks given on the
// command line (a project Codex never trusted ignores .codex/), its tools
// approved, the credential variables passed through, and the access level
// as the sandbox. aipm's hooks are its own, checked by aipm, so the run
// skips Codex's review of hooks (--dangerously-bypass-hook-trust).
func codexLaunchArgs(spec launchSpec, exe, hookWord, prompt string) []string {
	sandbox := map[string]string{accessRead: "read-only", accessProject: "workspace-write", accessFull: "danger-full-access"}[spec.Access]
	args := []string{"exec", "--skip-git-repo-check", "--sandbox", sandbox, "--dangerously-bypass-hook-trust"}
	set := func(key, value string) { args = append(args, "-c", key+"="+value) }
	server := "mcp_servers." + serverName
	set(server+".command", tomlString(exe))
	set(server+".args", tomlStrings(serveArgs))
	set(server+".env_vars", tomlStrings(append(slices.Clone(credentialVars), fsstore.EnvPurpose, fsstore.EnvProjectDir, fsstore.EnvRunID)))
	set(server+".default_tools_approval_mode", tomlString("approve"))
	set(server+".tool_timeout_sec", "60")
	for _, ev := range codexHookEvents(hookWord) {
		set("hooks."+ev.name, tomlHookGroups(ev.group))
	}
	if spec.Model != "" {
		args = append(args, "--model", spec.Model)
	}
	args = append(args, spec.Extra...)
	return append(args, prompt)
}

// tomlString is s as a TOML basic string (JSON's escapes are TOML's).
func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func tomlStrings(list []string) string {
	quoted := make([]string, len(list))
	for i, s := range list {
		quoted[i] = tomlString(s)
	}
	return "[" + strings.Join(quoted, ",") + "]"
}

// tomlHookGroups is one hook event's list as a TOML inline value.
func tomlHookGroups(g hookGroup) string {
	var handlers []string
	for _, h := range g.Hooks {
		handlers = append(handlers, fmt.Sprintf("{type=%s,command=%s,timeout=%d}", tomlString(h.Type), tomlString(h.Command), h.Timeout))
	}
	group := "hooks=[" + strings.Join(handlers, ",") + "]"
	if g.Matcher != "" {
		group = "matcher=" + tomlString(g.Matcher) + "," + group
	}
	return "[{" + group + "}]"
}

func newCmdLaunch(e *env) *cobra.Command {
	var spec launchSpec
	c := &cobra.Command{
		Use:   "launch claude|codex [--model M] [--access read|project|full] [-- CLIENT-ARGS...]",
		Short: "Start Claude Code or Codex headless as an aipm agent (the command aipm agent add --client writes)",
		Long: `Start a real client headless as one agent of this project: what aipm watch
runs for an agent added with aipm agent add ID --type ai --client claude|codex.
The client gets aipm's MCP server (this aipm), aipm's hooks, aipm's tools
allowed without a prompt (also in a folder it never trusted), the agent's
access as its permissions (Claude Code: acceptEdits and its Bash sandbox;
Codex: the workspace-write sandbox), and an opening prompt naming the agent,
the project and the aipm loop. The credential stays in the environment:
AIPM_PASSKEY_FILE, or the passkey saved by aipm agent passkey ID --save. The
user's own client settings are not touched.

--access: read (read the project; no edit, no command), project (the
default: edit files and run commands inside the project), full (anything,
without asking). Arguments after -- go to the client as they are.

When Claude Code refused tool calls, the agent's human (its parent, else the
project's humans) gets a system message naming them: a task reported done
by an agent whose edits were refused is not a silent success.`,
		Example: `  AIPM_AGENT_ID=coder aipm launch claude
  aipm launch codex --agent coder --model gpt-5-codex
  aipm launch claude --agent coder --access read -- --max-turns 50`,
		Args: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			if dash < 0 {
				dash = len(args)
			}
			if dash != 1 {
				return usageError("launch needs exactly one client before --: claude or codex")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			spec.Client, spec.Extra = args[0], args[1:]
			if err := spec.check(); err != nil {
				return asUsage(err)
			}
			return launchRun(cmd.Context(), e, spec)
		},
	}
	c.Flags().AddFlagSet(launchFlags(&spec))
	c.RegisterFlagCompletionFunc("access", cobra.FixedCompletions(accessLevels, cobra.ShellCompDirectiveNoFileComp))
	c.ValidArgs = []string{"claude", "codex"}
	return c
}

func launchRun(ctx context.Context, e *env, spec launchSpec) error {
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
	c := launchClients[spec.Client]
	program := lookPath(e.getenv("PATH"), c.program)
	if program == "" {
		return fmt.Errorf("launch: %s", clientMissing(e.getenv("PATH"), spec))
	}
	env := os.Environ()
	if e.getenv(fsstore.EnvPasskeyFile) == "" && e.getenv(fsstore.EnvPasskey) == "" {
		a, _ := cfg.Agent(agent)
		cred, err := store.Startable(a)
		if err != nil {
			return fmt.Errorf("launch: %w", err)
		}
		env = append(env, fsstore.EnvPasskeyFile+"="+cred)
	}
	env = append(env, fsstore.EnvAgentID+"="+agent, fsstore.EnvProjectDir+"="+store.ProjectDir())
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("launch: cannot find this aipm's path, which the client starts as its MCP server: %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	prompt := launchPrompt(spec, agent, cfg.Project.Name, store.ProjectDir(), e.getenv(fsstore.EnvPurpose))
	cmd := exec.CommandContext(ctx, program, c.argv(spec, exe, hookWord(e, exe), prompt)...)
	// Ctrl-C or the watcher's SIGTERM: the client gets SIGTERM and a
	// moment to end its sessions before it is killed.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = store.ProjectDir()
	cmd.Env = env
	cmd.Stderr = e.stderr
	var out bytes.Buffer
	if c.finish != nil {
		cmd.Stdout = &out
	} else {
		cmd.Stdout = e.stdout
	}
	runErr := cmd.Run()
	if c.finish != nil {
		text, refused := c.finish(out.Bytes())
		fmt.Fprint(e.stdout, text)
		if len(refused) > 0 {
			reportRefused(ctx, e, store, cfg, agent, spec, refused)
		}
	}
	var ee *exec.ExitError
	if errors.As(runErr, &ee) {
		code := ee.ExitCode()
		if code < 0 {
			code = exitFailed // ended by a signal
		}
		return &exitError{code: code, err: fmt.Errorf("launch: %s ended: %v", c.program, ee)}
	}
	if runErr != nil {
		return fmt.Errorf("launch: run %s: %w", c.program, runErr)
	}
	return nil
}

// reportRefused tells the agent's human that the client refused tool
// calls: a system message to its parent when that is a human, else to
// every human of the project; and a line in the run's log.
func reportRefused(ctx context.Context, e *env, store *fsstore.Store, cfg *storage.Config, agent string, spec launchSpec, refused []string) {
	counts := map[string]int{}
	var names []string
	for _, t := range refused {
		if counts[t] == 0 {
			names = append(names, t)
		}
		counts[t]++
	}
	for i, n := range names {
		if counts[n] > 1 {
			names[i] = fmt.Sprintf("%s ×%d", n, counts[n])
		}
	}
	msg := fmt.Sprintf("%s's %s refused %d tool call(s) (%s) with access %q: its work may be incomplete even if it reported done; "+
		"widen what it may do with aipm agent set %s --client %s --access full, or check its log (aipm status)",
		agent, spec.Client, len(refused), strings.Join(names, ", "), spec.Access, agent, spec.Client)
	fmt.Fprintln(e.stderr, "aipm: "+msg)
	var to []string
	if a, ok := cfg.Agent(agent); ok {
		if p, ok := cfg.Agent(a.Parent); ok && p.Type == storage.AgentHuman {
			to = []string{p.ID}
		}
	}
	if len(to) == 0 {
		for _, a := range cfg.Agents {
			if a.Type == storage.AgentHuman {
				to = append(to, a.ID)
			}
		}
	}
	for _, h := range to {
		if _, err := store.Send(ctx, cfg, fsstore.OutgoingMessage{From: storage.SystemSender, To: h, Content: msg, Kind: fsstore.KindSystem}); err != nil {
			fmt.Fprintf(e.stderr, "aipm: tell %s: %v\n", h, err)
		}
	}
}
