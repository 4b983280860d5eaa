package copilot

import (
	"encoding/json"
	"strings"

	"aipm/fsstore"
	"aipm/internal/clientconfig"
	"aipm/internal/lockedfile"
)

// hookEvents are aipm's hooks for GitHub Copilot CLI, under the
// event names it runs with Claude Code's input and answers (PreToolUse,
// not preToolUse: Copilot CLI 1.0.102 then sends hook_event_name,
// tool_name and tool_input, and reads hookSpecificOutput).
func hookEvents(command string) []clientconfig.HookEvent {
	one := []clientconfig.HookHandler{{Type: "command", Command: clientconfig.HookCommand(command, "copilot"), Timeout: clientconfig.HookTimeout}}
	return []clientconfig.HookEvent{
		{Name: "SessionStart", Group: clientconfig.HookGroup{Hooks: one}},
		{Name: "UserPromptSubmit", Group: clientconfig.HookGroup{Hooks: one}},
		{Name: "PreToolUse", Group: clientconfig.HookGroup{Hooks: one}},
		{Name: "PostToolUse", Group: clientconfig.HookGroup{Hooks: one}},
		{Name: "Stop", Group: clientconfig.HookGroup{Hooks: one}},
	}
}

// copilotHandler is one command of a Copilot CLI hooks file.
type copilotHandler struct {
	Type       string `json:"type"`
	Bash       string `json:"bash"`
	Cwd        string `json:"cwd,omitempty"`
	TimeoutSec int    `json:"timeoutSec"`
}

// hooksDocument is a Copilot CLI hooks file ({"version": 1,
// "hooks": {...}}) holding events, in their order, each run in cwd: a
// plugin's hooks run in the plugin's directory unless told (Copilot CLI
// 1.0.102), and aipm hook finds its project from its directory.
func hooksDocument(events []clientconfig.HookEvent, cwd string) ([]byte, error) {
	var hooks clientconfig.JSONObject
	for _, ev := range events {
		var handlers []copilotHandler
		for _, h := range ev.Group.Hooks {
			handlers = append(handlers, copilotHandler{Type: h.Type, Bash: h.Command, Cwd: cwd, TimeoutSec: h.Timeout})
		}
		raw, err := json.Marshal(handlers)
		if err != nil {
			return nil, err
		}
		hooks.Set(ev.Name, raw)
	}
	raw, err := json.Marshal(hooks)
	if err != nil {
		return nil, err
	}
	var doc clientconfig.JSONObject
	doc.Set("version", json.RawMessage("1"))
	doc.Set("hooks", raw)
	return json.Marshal(doc)
}

// copilotServer is Copilot CLI's entry of aipm's server: a local
// (stdio) server, every tool of it enabled. Copilot CLI passes its own
// environment to the server, the credential variables with it.
type copilotServer struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
	Tools   []string          `json:"tools"`
}

// mcpDocument is {"mcpServers": {"aipm": ...}}, the document
// copilot --additional-mcp-config takes (and ~/.copilot/mcp-config.json
// holds).
func mcpDocument(s clientconfig.Server) ([]byte, error) {
	return lockedfile.EncodeDoc(map[string]map[string]copilotServer{"mcpServers": {clientconfig.ServerName: {
		Type: "local", Command: s.Command, Args: s.Args, Env: s.Env, Tools: []string{"*"}}}})
}

// note is what mcp-config says of Copilot CLI's document.
func note(s clientconfig.Server) string {
	var b strings.Builder
	b.WriteString("aipm: stdout is an MCP document for GitHub Copilot CLI: save it and run copilot --additional-mcp-config @FILE,\n" +
		"or merge its \"aipm\" entry into ~/.copilot/mcp-config.json. aipm launch copilot passes it, and aipm's hooks\n" +
		"(" + clientconfig.HookCommand(s.HookCommand, "copilot") + " on " + clientconfig.HookEventNames(hookEvents(s.HookCommand)) + ") in a plugin of its own, on copilot's command line.\n")
	if s.Env == nil {
		b.WriteString("aipm serve takes the agent's credential from Copilot CLI's environment, so the passkey never\n" +
			"reaches the model: AIPM_AGENT_ID=coder AIPM_PASSKEY_FILE=$HOME/.config/aipm/coder.key copilot\n")
	} else {
		b.WriteString("This entry is for agent " + s.Env[fsstore.EnvAgentID] + " only.\n")
	}
	return b.String()
}
