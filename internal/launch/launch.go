// Package launch is how aipm starts Claude Code or Codex as one agent of a
// project. An agent that is a real client (DESIGN 19) has the command
//
//	command = ["aipm", "launch", "claude"]
//
// in config.toml, with options after the client's name (--model, --access,
// and the client's own arguments after --). aipm watch runs it like any
// command; aipm launch (Run) starts the client headless with everything it
// needs: aipm's MCP entry, the hooks, the permissions aipm's tools and the
// agent's work need, and an opening prompt. The credential stays in the
// environment (AIPM_PASSKEY_FILE, the saved passkey), never on a command
// line or in the prompt. Nothing is written to the client's own settings.
//
//   - launch.go: what a command line says (Spec, SpecOf, Flags), each
//     client's command line (claudeLaunchArgs, codexLaunchArgs) and the
//     opening prompt.
//   - run.go: the client started and waited for (Run); what it refused
//     told to the agent's human.
//   - refusals.go: the client's refusals read from its output, told apart
//     from the calls aipm's own hook denied, and the sentence with the fix;
//     codex.go: Codex's --json events and its record of the session.
//   - starts.go, problems.go: what aipm watch starts for an agent and what
//     it may do (Starts), and what stops it (StartProblems, for doctor).
//   - checks.go: what the clients need of the machine (CheckClients, for
//     doctor): not root for Claude Code's full access, a version as new as
//     the one tested, a model endpoint there, its sandbox's programs.
package launch

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"aipm/fsstore"
	"aipm/internal/clientconfig"
	"aipm/internal/shell"
)

// Access levels: what a launched client may do beyond aipm's tools.
const (
	AccessRead    = "read"    // read the project; no edit (Codex: commands that do not write)
	AccessProject = "project" // edit files and run commands inside the project
	AccessFull    = "full"    // do anything, without asking
)

// AccessLevels are the access levels, narrowest first.
var AccessLevels = []string{AccessRead, AccessProject, AccessFull}

// Spec is what an "aipm launch" command line says.
type Spec struct {
	Client string   // claude or codex
	Model  string   // the client's --model, "" for its default
	Access string   // AccessRead, AccessProject (default) or AccessFull
	Agent  string   // --agent; "" takes $AIPM_AGENT_ID
	Extra  []string // the client's own arguments, after --
}

// Flags are aipm launch's flags, bound to spec: the command and
// SpecOf parse a command line with the same set.
func Flags(spec *Spec) *pflag.FlagSet {
	fs := pflag.NewFlagSet("launch", pflag.ContinueOnError)
	fs.StringVar(&spec.Model, "model", "", "the client's model (its --model); default: the client's own")
	fs.StringVar(&spec.Access, "access", AccessProject, "what the agent may do: read (the project, no edit; Codex also runs commands that do not write), project (edit files and run commands inside the project), full (do anything, without asking)")
	fs.StringVar(&spec.Agent, "agent", "", "the agent to start (default $AIPM_AGENT_ID, as aipm watch sets it)")
	return fs
}

// SpecOf reads an agent's command: ok is false when it is not
// "aipm launch ..." (any path to aipm counts); err says what is wrong
// with one that is.
func SpecOf(command []string) (spec Spec, ok bool, err error) {
	if len(command) < 2 || filepath.Base(command[0]) != clientconfig.ServerName || command[1] != "launch" {
		return Spec{}, false, nil
	}
	fs := Flags(&spec)
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
	return spec, true, spec.Check()
}

// Check says what is wrong with spec, in one sentence.
func (spec Spec) Check() error {
	if _, ok := launchClients[spec.Client]; !ok {
		return fmt.Errorf("aipm launch: client %q is unknown: use claude or codex", spec.Client)
	}
	if !slices.Contains(AccessLevels, spec.Access) {
		return fmt.Errorf("aipm launch: --access %q is unknown: use read, project or full", spec.Access)
	}
	return nil
}

// Command is spec as an agent's command in config.toml: only what differs
// from the defaults, so that it reads short.
func (spec Spec) Command() []string {
	cmd := []string{clientconfig.ServerName, "launch", spec.Client}
	if spec.Model != "" {
		cmd = append(cmd, "--model", spec.Model)
	}
	if spec.Access != "" && spec.Access != AccessProject {
		cmd = append(cmd, "--access", spec.Access)
	}
	if len(spec.Extra) > 0 {
		cmd = append(append(cmd, "--"), spec.Extra...)
	}
	return cmd
}

// May is what an agent launched with spec may do, for agent list and
// doctor ("it may ..."): each client's own terms of its access level.
func (spec Spec) May() string {
	switch spec.Access {
	case AccessRead:
		if spec.Client == "codex" {
			// Codex's read-only sandbox runs commands and fails their writes.
			return "read the project and run commands that do not write; no edit"
		}
		return "read the project; no edit, no command"
	case AccessFull:
		return "do anything, without asking"
	}
	return "edit files and run commands inside the project"
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

// launchClient is what aipm knows of starting one client headless.
type launchClient struct {
	program string // the executable looked up on PATH
	install string // how to get it, for the sentence when it is missing
	pkg     string // its npm package, for the update aipm doctor suggests
	// tested is the version of the client aipm's end-to-end tests drive
	// (testdata/realclients/package.json pins it): aipm doctor warns of
	// an older one.
	tested string
	// argv is the client's command line (without the program): exe is
	// this aipm's absolute path (the MCP server and the hooks run it).
	argv func(spec Spec, exe, hookWord, prompt string) []string
	// output reads what the client prints on stdout as it runs, writing
	// the text for the run's log to log, and says at the end which tool
	// calls it refused (refusals.go).
	output func(spec Spec, log io.Writer, getenv func(string) string) clientOutput
}

var launchClients = map[string]launchClient{
	"claude": {program: "claude", install: "install Claude Code (npm install -g @anthropic-ai/claude-code)", pkg: "@anthropic-ai/claude-code", tested: "2.1.332",
		argv: claudeLaunchArgs, output: newClaudeOutput},
	"codex": {program: "codex", install: "install Codex CLI (npm install -g @openai/codex)", pkg: "@openai/codex", tested: "0.171.0",
		argv: codexLaunchArgs, output: newCodexOutput},
}

// Missing is the one sentence for a client that is not on PATH, or
// "" when it is there.
func Missing(path string, spec Spec) string {
	c := launchClients[spec.Client]
	if c.program == "" || shell.LookPath(path, c.program) != "" {
		return ""
	}
	return fmt.Sprintf("%s is not on PATH, so aipm watch cannot start this agent: %s, or put it on the PATH aipm watch runs with", c.program, c.install)
}

// launchPrompt is the opening prompt: who the agent is, where, and the
// aipm loop. It names no secret.
func launchPrompt(spec Spec, agent, project, dir, purpose string) string {
	tool := func(name string) string { return name }
	if spec.Client == "claude" {
		tool = func(name string) string { return "mcp__" + clientconfig.ServerName + "__" + name }
	}
	var b strings.Builder
	fmt.Fprintf(&b, "You are %s, an AI agent of the aipm project %q in %s", agent, project, dir)
	if purpose != "" {
		fmt.Fprintf(&b, ", started for your %s session", purpose)
	}
	fmt.Fprintf(&b, ". aipm coordinates your team through its MCP server %q. Call %s with agent_id %q (no passkey: the server holds it), "+
		"then call %s and do exactly what its instruction says, again and again, until it says exit. "+
		"Do the work itself with your own tools in this project; say what you did in the reports aipm asks for.",
		clientconfig.ServerName, tool("authenticate"), agent, tool("get_next_action"))
	return b.String()
}

// claudeLaunchArgs: claude -p, aipm's server alone (--strict-mcp-config),
// loaded before the first turn (alwaysLoad), the hooks and the sandbox in
// --settings, aipm's tools allowed on the command line (which a folder
// never trusted requires), and the access level as a permission mode.
func claudeLaunchArgs(spec Spec, exe, hookWord, prompt string) []string {
	server := map[string]any{"command": exe, "args": clientconfig.ServeArgs}
	// alwaysLoad: Claude Code connects the server before the first model
	// request, whatever its own setting for waiting on MCP servers says,
	// and hands the model aipm's tools whole instead of deferring them
	// behind its tool search.
	server["alwaysLoad"] = true
	mcp, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{clientconfig.ServerName: server}})
	// {"hooks": ...}, as mcp-config writes them, and the sandbox.
	var settings map[string]json.RawMessage
	hooks, _ := clientconfig.HooksDocument(clientconfig.ClaudeHookEvents(hookWord))
	json.Unmarshal(hooks, &settings)
	mode := "default"
	switch spec.Access {
	case AccessProject:
		// Edits inside the working directory without asking; Bash in
		// Claude Code's sandbox, which may write only there.
		mode = "acceptEdits"
		settings["sandbox"] = json.RawMessage(`{"enabled":true,"autoAllowBashIfSandboxed":true,"allowUnsandboxedCommands":false}`)
	case AccessFull:
		mode = "bypassPermissions"
	}
	s, _ := json.Marshal(settings)
	args := []string{"-p", prompt,
		"--mcp-config", string(mcp), "--strict-mcp-config",
		"--settings", string(s),
		"--allowedTools", "mcp__" + clientconfig.ServerName,
		"--permission-mode", mode,
		"--output-format", "json",
	}
	if spec.Model != "" {
		args = append(args, "--model", spec.Model)
	}
	return append(args, spec.Extra...)
}

// codexLaunchArgs: codex exec with aipm's server and hooks given on the
// command line (a project Codex never trusted ignores .codex/), the server
// required (started before the first turn), its tools approved, the
// credential variables passed through, and the access level as the
// sandbox. aipm's hooks are its own, checked by aipm, so the run skips
// Codex's review of hooks (--dangerously-bypass-hook-trust). Its events
// come as JSON lines (--json), which aipm launch reads (codexOutput).
func codexLaunchArgs(spec Spec, exe, hookWord, prompt string) []string {
	sandbox := map[string]string{AccessRead: "read-only", AccessProject: "workspace-write", AccessFull: "danger-full-access"}[spec.Access]
	args := []string{"exec", "--json", "--skip-git-repo-check", "--sandbox", sandbox, "--dangerously-bypass-hook-trust"}
	set := func(key, value string) { args = append(args, "-c", key+"="+value) }
	server := "mcp_servers." + clientconfig.ServerName
	set(server+".command", tomlString(exe))
	set(server+".args", tomlStrings(clientconfig.ServeArgs))
	set(server+".env_vars", tomlStrings(append(slices.Clone(clientconfig.CredentialVars), fsstore.EnvPurpose, fsstore.EnvProjectDir, fsstore.EnvRunID)))
	set(server+".default_tools_approval_mode", tomlString("approve"))
	set(server+".tool_timeout_sec", "60")
	// required: the first turn waits for the server (an optional one gets
	// about a second, then the turn starts without it), and the run fails
	// if it cannot start.
	set(server+".required", "true")
	for _, ev := range clientconfig.CodexHookEvents(hookWord) {
		set("hooks."+ev.Name, tomlHookGroups(ev.Group))
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
func tomlHookGroups(g clientconfig.HookGroup) string {
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
