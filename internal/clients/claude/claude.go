// Package claude is Claude Code (@anthropic-ai/claude-code) to aipm,
// whole: its Client for the registry (internal/clients).
//
//   - claude.go: the Client; its command line (claude -p), its hooks'
//     dialect, what each access level lets it do, its JSON result read for
//     the calls it refused, and why it will not start as root.
//   - config.go: mcp-config's .mcp.json entry, its note, and --write's
//     merge into .mcp.json and .claude/settings.json (aipm's hooks too);
//     the entry for aipm serve --http.
//   - trust.go: whether Claude Code will refuse aipm's tools in a project
//     (the trust dialog's answer in ~/.claude.json).
//   - endpoint.go: where it sends its model requests, with which credential.
package claude

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"

	"aipm/internal/clientconfig"
	"aipm/internal/clients/clientkit"
	"aipm/internal/shell"
)

// Client is Claude Code (@anthropic-ai/claude-code), started as claude -p.
var Client = clientkit.Client{
	Name: "claude", Title: "Claude Code", Program: "claude",
	Package: "@anthropic-ai/claude-code", Tested: "2.1.332",
	Install: "install Claude Code (npm install -g @anthropic-ai/claude-code)",
	Launch:  claudeLaunch,
	Output:  newClaudeOutput,
	Hooks:   claudeDialect,
	Config:  clientkit.Config{Doc: configDoc, Note: note, Write: writeFiles, URLDoc: urlDoc},
	Trust:   trust,
	Endpoint: func(getenv func(string) string, _ []string) clientconfig.Endpoint {
		return endpoint(getenv)
	},
	// Claude Code names an MCP tool mcp__<server>__<tool>.
	ToolName:    func(tool string) string { return "mcp__" + clientconfig.ServerName + "__" + tool },
	May:         claudeMay,
	RootProblem: claudeRootProblem,
	Sandbox:     claudeSandbox,
	RefusedBy:   "its permissions",
	Widen:       claudeWiden,
}

// claudeDialect: Claude Code's hooks (its hooks reference), the JSON
// answers both it and Codex read (clientkit.JSONDeny, JSONContext,
// JSONBlock).
var claudeDialect = clientkit.Dialect{
	Entries:       hookEvents,
	Events:        clientkit.SameEvents(),
	Wake:          true,
	OwnToolPrefix: "mcp__" + clientconfig.ServerName + "__",
	// Edit, Write, MultiEdit and NotebookEdit name their file in
	// tool_input (DESIGN section 18).
	WritingTools: map[string]func(json.RawMessage) []string{
		"Edit":         clientkit.FileField("file_path"),
		"Write":        clientkit.FileField("file_path"),
		"MultiEdit":    clientkit.FileField("file_path"),
		"NotebookEdit": clientkit.FileField("notebook_path"),
	},
	Deny:    clientkit.JSONDeny,
	Context: clientkit.JSONContext,
	Block:   clientkit.JSONBlock,
}

// claudeLaunch: claude -p, aipm's server alone (--strict-mcp-config),
// loaded before the first turn (alwaysLoad), the hooks and the sandbox in
// --settings, aipm's tools allowed on the command line (which a folder
// never trusted requires), and the access level as a permission mode.
func claudeLaunch(r clientkit.Run) clientkit.Command {
	server := map[string]any{"command": r.Exe, "args": clientconfig.ServeArgs}
	// alwaysLoad: Claude Code connects the server before the first model
	// request, whatever its own setting for waiting on MCP servers says,
	// and hands the model aipm's tools whole instead of deferring them
	// behind its tool search.
	server["alwaysLoad"] = true
	mcp, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{clientconfig.ServerName: server}})
	// {"hooks": ...}, as mcp-config writes them, and the sandbox.
	var settings map[string]json.RawMessage
	hooks, _ := clientconfig.HooksDocument(hookEvents(r.HookWord))
	json.Unmarshal(hooks, &settings)
	mode := "default"
	switch r.Access {
	case clientkit.AccessProject:
		// Edits inside the working directory without asking; Bash in
		// Claude Code's sandbox, which may write only there.
		mode = "acceptEdits"
		settings["sandbox"] = json.RawMessage(`{"enabled":true,"autoAllowBashIfSandboxed":true,"allowUnsandboxedCommands":false}`)
	case clientkit.AccessFull:
		mode = "bypassPermissions"
	}
	s, _ := json.Marshal(settings)
	args := []string{"-p", r.Prompt,
		"--mcp-config", string(mcp), "--strict-mcp-config",
		"--settings", string(s),
		"--allowedTools", "mcp__" + clientconfig.ServerName,
		"--permission-mode", mode,
		"--output-format", "json",
	}
	if r.Model != "" {
		args = append(args, "--model", r.Model)
	}
	return clientkit.Command{Args: append(args, r.Extra...)}
}

// claudeMay is what each access level lets Claude Code do.
func claudeMay(access string) string {
	switch access {
	case clientkit.AccessRead:
		return "read the project; no edit, no command"
	case clientkit.AccessFull:
		return "do anything, without asking"
	}
	return "edit files and run commands inside the project"
}

// claudeOutput is claude -p --output-format json's one JSON result,
// read when the client has exited: its text for the log and its
// permission_denials, each {tool_name, tool_use_id, tool_input}. Those
// include the calls aipm's PreToolUse hook denied; aipm launch tells them
// apart.
type claudeOutput struct {
	log io.Writer
	buf bytes.Buffer
}

func newClaudeOutput(_ clientkit.Run, log io.Writer) clientkit.Output { return &claudeOutput{log: log} }

func (c *claudeOutput) Write(p []byte) (int, error) { return c.buf.Write(p) }

// Refusals are the result's permission_denials.
func (c *claudeOutput) Refusals() []clientkit.Refusal {
	var r struct {
		Result  string `json:"result"`
		Denials []struct {
			Tool string `json:"tool_name"`
			ID   string `json:"tool_use_id"`
		} `json:"permission_denials"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(c.buf.Bytes()), &r); err != nil {
		c.log.Write(c.buf.Bytes()) // not the JSON result: pass it on as it is
		return nil
	}
	fmt.Fprintln(c.log, r.Result)
	var out []clientkit.Refusal
	for _, d := range r.Denials {
		out = append(out, clientkit.Refusal{ID: d.ID, Tool: d.Tool})
	}
	return out
}

// claudeRefusesRoot says whether Claude Code refuses bypassPermissions
// (--access full) to a process with getenv's environment: Claude Code
// 2.1.332 exits 1 with "--dangerously-skip-permissions cannot be used
// with root/sudo privileges for security reasons" when its uid is 0,
// unless IS_SANDBOX=1 or CLAUDE_CODE_BUBBLEWRAP says it runs in a
// sandbox made for it.
func claudeRefusesRoot(root bool, getenv func(string) string) bool {
	return root && getenv("IS_SANDBOX") != "1" && getenv("CLAUDE_CODE_BUBBLEWRAP") == ""
}

// claudeRootProblem: Claude Code with --access full as root.
func claudeRootProblem(access, agent string, root bool, getenv func(string) string) string {
	if access != clientkit.AccessFull || !claudeRefusesRoot(root, getenv) {
		return ""
	}
	return fmt.Sprintf("Claude Code refuses --access full (its --dangerously-skip-permissions) to root, so aipm does not start %s's claude as root: "+
		"run aipm agent set %s --access project, or run aipm watch as a user other than root; in a throw-away container, "+
		`env = { IS_SANDBOX = "1" } in %s's [[agents]] entry of .ai-pm/config.toml lets Claude Code start as root`, agent, agent, agent)
}

// claudeSandbox: Claude Code's Bash sandbox (--access project) needs
// bubblewrap and socat on Linux (Claude Code 2.1.332 without them says
// "Sandbox disabled" and runs commands unsandboxed).
func claudeSandbox(access string) ([]string, func(agents string, missing []string) string) {
	if access != clientkit.AccessProject || runtime.GOOS != "linux" {
		return nil, nil
	}
	return []string{"bwrap", "socat"}, func(agents string, missing []string) string {
		are := strings.Join(missing, " and ") + " are"
		if len(missing) == 1 {
			are = missing[0] + " is"
		}
		return fmt.Sprintf("%s: Claude Code's Bash sandbox (--access project) needs bubblewrap and socat on Linux, and %s not on PATH, "+
			"so Claude Code turns the sandbox off and runs its commands without it (only its permission checks hold them, and nothing keeps them off the network): "+
			"install them (apt install bubblewrap socat, or dnf install bubblewrap socat)", agents, are)
	}
}

// claudeWiden: under --access project, the tools Claude Code refused
// allowed by name (its --allowedTools), or --access full where it starts.
func claudeWiden(set string, r clientkit.Run, tools []string, root bool) string {
	fix := set
	for _, a := range append(append(append([]string{}, r.Extra...), "--allowedTools"), strings.Join(tools, ",")) {
		fix += " " + shell.Quote("--client-arg="+a)
	}
	fix += " allows those tools without asking"
	if !claudeRefusesRoot(root, r.Getenv) {
		fix += ", or " + set + " --access full lets it do anything"
	} else {
		fix += " (--access full cannot start Claude Code as root)"
	}
	return fix
}
