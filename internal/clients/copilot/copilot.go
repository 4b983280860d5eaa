// Package copilot is GitHub Copilot CLI (@github/copilot) to aipm,
// whole: its Client for the registry (internal/clients).
//
//   - copilot.go: the Client; its command line (copilot -p, aipm's hooks in
//     a plugin of aipm's), its hooks' dialect, what each access level lets
//     it do, its model endpoint, its JSON lines read for the calls it
//     refused.
//   - config.go: aipm's hooks and server in Copilot CLI's documents, and
//     mcp-config's note. It records no trust aipm reads.
package copilot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"aipm/internal/clientconfig"
	"aipm/internal/clients/clientkit"
)

// Client is GitHub Copilot CLI (@github/copilot), started as copilot -p.
// Measured with 1.0.102: with COPILOT_PROVIDER_BASE_URL set (BYOK) it
// needs no GitHub login; COPILOT_OFFLINE=true keeps it off api.github.com,
// which it reaches for otherwise. A folder it never trusted still runs the
// hooks of a plugin given with --plugin-dir and the servers of
// --additional-mcp-config. It names aipm's tools aipm-<tool>, and defers
// them behind its tool_search_tool for a model it knows.
var Client = clientkit.Client{
	Name: "copilot", Title: "GitHub Copilot CLI", Program: "copilot",
	Package: "@github/copilot", Tested: "1.0.102",
	Install: "install GitHub Copilot CLI (npm install -g @github/copilot)",
	Launch:  copilotLaunch,
	Output:  newCopilotOutput,
	Hooks:   copilotDialect,
	Config: clientkit.Config{Doc: mcpDocument, Note: note, Write: writeFiles,
		URLDoc: func(string, string) ([]byte, error) {
			return nil, fmt.Errorf("aipm mcp-config copilot --url is not supported yet: run aipm mcp-config copilot for a local server")
		}},
	Trust:    func(func(string) string, string) string { return "" },
	Endpoint: endpoint,
	// Copilot CLI names an MCP tool <server>-<tool>.
	ToolName:  func(tool string) string { return clientconfig.ServerName + "-" + tool },
	May:       copilotMay,
	RefusedBy: "its permissions",
	Widen: func(set string, _ clientkit.Run, _ []string, _ bool) string {
		return set + " --access full lets it do anything (its --allow-all)"
	},
}

// copilotDialect: Copilot CLI's hooks under Claude Code's event names,
// which it runs with Claude Code's input (its own tools renamed: create
// is Write, edit is Edit, bash is Bash, each file in tool_input.path)
// and whose deny and block it reads as Claude Code's (a PreToolUse deny
// reaches the model as "Denied by preToolUse hook: <reason>"); context
// it reads at the top level (copilotContext).
var copilotDialect = clientkit.Dialect{
	Entries:       hookEvents,
	Events:        clientkit.SameEvents(),
	NoWake:        "--wake is for Claude Code's asyncRewake Stop hook; Copilot CLI has none, so leave --wake out with --client copilot",
	OwnToolPrefix: clientconfig.ServerName + "-",
	WritingTools: map[string]func(json.RawMessage) []string{
		"Write": clientkit.FileField("path"),
		"Edit":  clientkit.FileField("path"),
	},
	Deny:    clientkit.JSONDeny,
	Context: copilotContext,
	Block:   clientkit.JSONBlock,
}

// copilotContext: Copilot CLI 1.0.102 adds a hook's top-level
// additionalContext to the model's context (at PostToolUse it ignores
// Claude Code's hookSpecificOutput.additionalContext).
func copilotContext(_, text string) clientkit.Answer {
	data, _ := json.Marshal(map[string]string{"additionalContext": text}) // a string: cannot fail
	return clientkit.Answer{Stdout: append(data, '\n')}
}

// copilotPluginDir is the plugin holding aipm's hooks, in Run.Scratch.
const copilotPluginDir = "copilot-plugin"

// copilotLaunch: copilot -p, aipm's server on the command line
// (--additional-mcp-config), aipm's hooks in a plugin of aipm's own
// (--plugin-dir: hooks are read from no command line), its events as JSON
// lines, nothing asked (--no-ask-user), no update, and no GitHub MCP
// server. The access level: read denies its writes and its shell (a deny
// rule wins over --allow-all-tools), project allows every tool on the
// paths of the project (and the temporary directory), full is
// --allow-all. With BYOK (COPILOT_PROVIDER_BASE_URL) and COPILOT_OFFLINE
// unset, it runs offline, since it needs no GitHub then.
func copilotLaunch(r clientkit.Run) clientkit.Command {
	mcp, _ := mcpDocument(clientconfig.Server{Command: r.Exe, Args: clientconfig.ServeArgs})
	hooks, _ := hooksDocument(hookEvents(r.HookWord), r.ProjectDir)
	plugin := filepath.Join(r.Scratch, copilotPluginDir)
	args := []string{"-p", r.Prompt,
		"--additional-mcp-config", string(bytes.TrimSpace(mcp)),
		"--plugin-dir", plugin,
		"--output-format", "json", "--no-ask-user", "--no-auto-update", "--disable-builtin-mcps",
	}
	switch r.Access {
	case clientkit.AccessRead:
		args = append(args, "--allow-all-tools", "--deny-tool", "write", "--deny-tool", "shell")
	case clientkit.AccessFull:
		args = append(args, "--allow-all")
	default:
		args = append(args, "--allow-all-tools")
	}
	if r.Model != "" {
		args = append(args, "--model", r.Model)
	}
	var env []string
	if r.Getenv != nil && r.Getenv("COPILOT_PROVIDER_BASE_URL") != "" && r.Getenv("COPILOT_OFFLINE") == "" {
		env = append(env, "COPILOT_OFFLINE=true")
	}
	return clientkit.Command{Args: append(args, r.Extra...), Env: env, Files: []clientkit.File{
		{Path: filepath.Join(plugin, "plugin.json"), Data: []byte(`{"name":"aipm","description":"aipm's hooks","hooks":"hooks.json"}` + "\n")},
		{Path: filepath.Join(plugin, "hooks.json"), Data: append(hooks, '\n')},
	}}
}

// copilotMay is what each access level lets Copilot CLI do.
func copilotMay(access string) string {
	switch access {
	case clientkit.AccessRead:
		return "read the project; no edit, no command"
	case clientkit.AccessFull:
		return "do anything, without asking"
	}
	return "edit files inside the project and run commands (Copilot CLI runs them without a sandbox)"
}

// writeFiles: mcp-config copilot --write has no project file to merge
// into that Copilot CLI reads without the user's trust of the folder
// recorded in their own config; not done yet.
func writeFiles(string, clientconfig.Server) ([]clientconfig.FileChange, error) {
	return nil, fmt.Errorf("aipm mcp-config copilot --write is not supported yet: run aipm launch copilot, or pass aipm mcp-config copilot's document to copilot --additional-mcp-config @FILE")
}

// endpoint: with COPILOT_PROVIDER_BASE_URL (BYOK), the provider's
// URL and COPILOT_PROVIDER_API_KEY, _BEARER_TOKEN or _API_KEY_COMMAND;
// else GitHub's Copilot service, with the user's GitHub login.
func endpoint(getenv func(string) string, _ []string) clientconfig.Endpoint {
	e := clientconfig.Endpoint{URL: getenv("COPILOT_PROVIDER_BASE_URL"), From: "COPILOT_PROVIDER_BASE_URL"}
	if e.URL == "" {
		return clientconfig.Endpoint{Unknown: "COPILOT_PROVIDER_BASE_URL is unset, so Copilot CLI uses GitHub's Copilot service with the user's GitHub login"}
	}
	for _, v := range []string{"COPILOT_PROVIDER_BEARER_TOKEN", "COPILOT_PROVIDER_API_KEY_COMMAND", "COPILOT_PROVIDER_API_KEY"} {
		if getenv(v) != "" {
			e.Credential = v
			return e
		}
	}
	// Optional for a local provider (Ollama): the client starts without.
	e.Credential = "none needed by a local provider (COPILOT_PROVIDER_API_KEY is unset)"
	return e
}

// copilotOutput reads copilot -p --output-format json's JSON lines: the
// assistant's messages for the log, and the tool calls its permissions
// refused (tool.execution_complete with error code "denied"), named as
// tool.execution_start named them. The calls aipm's own PreToolUse hook
// denied ("Denied by preToolUse hook: ...") are left out: its hook input
// names no call id to tell them apart by.
type copilotOutput struct {
	*clientkit.Lines
	log     io.Writer
	tools   map[string]string // call id → tool name
	refused []clientkit.Refusal
}

func newCopilotOutput(_ clientkit.Run, log io.Writer) clientkit.Output {
	c := &copilotOutput{log: log, tools: map[string]string{}}
	c.Lines = clientkit.NewLines(c.line)
	return c
}

// copilotEvent is the part of one JSON line aipm reads.
type copilotEvent struct {
	Type string `json:"type"`
	Data struct {
		ToolCallID string `json:"toolCallId"`
		ToolName   string `json:"toolName"`
		Content    string `json:"content"`
		Success    *bool  `json:"success"`
		Error      *struct {
			Message string `json:"message"`
			Code    string `json:"code"`
		} `json:"error"`
	} `json:"data"`
}

func (c *copilotOutput) line(raw []byte) {
	var ev copilotEvent
	if json.Unmarshal(raw, &ev) != nil {
		c.log.Write(append(bytes.Clone(raw), '\n')) // not an event: pass it on
		return
	}
	switch ev.Type {
	case "assistant.message":
		if strings.TrimSpace(ev.Data.Content) != "" {
			fmt.Fprintln(c.log, ev.Data.Content)
		}
	case "tool.execution_start":
		c.tools[ev.Data.ToolCallID] = ev.Data.ToolName
	case "tool.execution_complete":
		if e := ev.Data.Error; e != nil && e.Code == "denied" && !strings.HasPrefix(e.Message, "Denied by preToolUse hook") {
			c.refused = append(c.refused, clientkit.Refusal{ID: ev.Data.ToolCallID, Tool: c.tools[ev.Data.ToolCallID], Said: e.Message})
		}
	}
}

// Refusals are the calls Copilot CLI's permissions refused.
func (c *copilotOutput) Refusals() []clientkit.Refusal {
	var out []clientkit.Refusal
	c.Done(func() { out = slices.Clone(c.refused) })
	return out
}
