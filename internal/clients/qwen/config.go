package qwen

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"aipm/internal/clientconfig"
	"aipm/internal/lockedfile"
)

// Qwen Code (0.24.4), a fork of Gemini CLI with Claude Code's hooks, reads
// MCP servers and hooks from settings files: the system file
// ($QWEN_CODE_SYSTEM_SETTINGS_PATH, else /etc/qwen-code/settings.json),
// the user's ($QWEN_HOME/settings.json, else ~/.qwen/settings.json) and the
// project's .qwen/settings.json. Its folder trust is off unless
// security.folderTrust.enabled says otherwise, but a server of the
// project's ("workspace" scope) starts only once approved in its
// mcpApprovals.json ($QWEN_CODE_MCP_APPROVALS_PATH, else ~/.qwen/); a
// system file's server needs no approval. It hands an MCP server its whole
// environment, and names aipm's tools mcp__aipm__<tool>, as Claude Code
// does.

// settingsFile is where Qwen Code reads a project's settings.
var settingsFile = filepath.Join(".qwen", "settings.json")

// hookTimeout is how long (milliseconds, Qwen Code's unit) it lets
// aipm hook answer: HookTimeout seconds.
const hookTimeout = clientconfig.HookTimeout * 1000

// hookEvents are aipm's hooks in Qwen Code's settings: its events are
// Claude Code's names (SessionStart, UserPromptSubmit, PreToolUse and
// PostToolUse for every tool, Stop).
func hookEvents(command string) []clientconfig.HookEvent {
	one := []clientconfig.HookHandler{{Type: "command", Command: clientconfig.HookCommand(command, "qwen"), Timeout: hookTimeout}}
	return []clientconfig.HookEvent{
		{Name: "SessionStart", Group: clientconfig.HookGroup{Hooks: one}},
		{Name: "UserPromptSubmit", Group: clientconfig.HookGroup{Hooks: one}},
		{Name: "PreToolUse", Group: clientconfig.HookGroup{Matcher: "*", Hooks: one}},
		{Name: "PostToolUse", Group: clientconfig.HookGroup{Matcher: "*", Hooks: one}},
		{Name: "Stop", Group: clientconfig.HookGroup{Hooks: one}},
	}
}

// qwenServer is aipm's mcpServers entry for Qwen Code: trusted (its tools
// run without a confirmation, which qwen -p cannot give), its tools in the
// model's first request (Qwen Code 0.24.4 otherwise defers MCP tools
// behind its tool_search, which aipm's instructions do not name).
type qwenServer struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
	Trust   bool              `json:"trust"`
	Timeout int               `json:"timeout,omitempty"` // milliseconds a tool call may take
	// AlwaysLoadTools: the server's tools go to the model whole, in its
	// first request, instead of deferred behind Qwen Code's tool_search.
	AlwaysLoadTools bool `json:"alwaysLoadTools,omitempty"`
}

func newQwenServer(s clientconfig.Server) qwenServer {
	return qwenServer{Command: s.Command, Args: s.Args, Env: s.Env, Trust: true, AlwaysLoadTools: true}
}

// configDoc is the {"mcpServers": {"aipm": …}} document for Qwen Code.
func configDoc(s clientconfig.Server) ([]byte, error) {
	return lockedfile.EncodeDoc(map[string]map[string]qwenServer{"mcpServers": {clientconfig.ServerName: newQwenServer(s)}})
}

// note is what mcp-config qwen says about its document.
func note(s clientconfig.Server) string {
	var b strings.Builder
	b.WriteString("aipm: stdout is the \"mcpServers\" entry for Qwen Code's .qwen/settings.json; aipm mcp-config qwen --write\n" +
		"merges it into the project's .qwen/settings.json with aipm's hooks (" + clientconfig.HookCommand(s.HookCommand, "qwen") + " on " +
		clientconfig.HookEventNames(hookEvents(s.HookCommand)) + "), keeping what else it holds.\n" +
		"Qwen Code starts a project's MCP server only once it is approved (qwen mcp, or the prompt in an interactive qwen).\n")
	if s.Env == nil {
		b.WriteString("aipm serve takes the agent's credential from Qwen Code's environment, so the passkey never\n" +
			"reaches the model: AIPM_AGENT_ID=coder AIPM_PASSKEY_FILE=$HOME/.config/aipm/coder.key qwen\n")
	}
	return b.String()
}

// writeFiles merges aipm's server and hooks into the project's
// .qwen/settings.json (the new content; clientconfig.Write writes it).
func writeFiles(project string, s clientconfig.Server) ([]clientconfig.FileChange, error) {
	entry, err := json.Marshal(newQwenServer(s))
	if err != nil {
		return nil, err
	}
	c, err := clientconfig.MergeJSONFile(project, settingsFile, func(root *clientconfig.JSONObject) (string, error) {
		server, err := clientconfig.MergeServer(root, "mcpServers", entry)
		if err != nil {
			return "", err
		}
		var did []string
		if server != "" {
			did = append(did, server)
		}
		hooks, err := clientconfig.MergeHooks(root, hookEvents(s.HookCommand))
		if err != nil {
			return "", err
		}
		if hooks != "" {
			did = append(did, hooks)
		}
		return clientconfig.JoinAnd(did), nil
	})
	return []clientconfig.FileChange{c}, err
}

// launchSettings is the whole system settings file aipm launch gives
// Qwen Code for one run (QWEN_CODE_SYSTEM_SETTINGS_PATH, a file of aipm's:
// it overrides the user's settings and needs no approval): aipm's server
// (exe serve, its tools loaded up front), its hooks (run by hookWord), and usage statistics, update
// checks and the background memory extraction off.
func launchSettings(exe, hookWord string) ([]byte, error) {
	var root clientconfig.JSONObject
	set := func(o *clientconfig.JSONObject, key string, v any) {
		raw, _ := json.Marshal(v) // maps of strings, bools and numbers
		o.Set(key, raw)
	}
	server := newQwenServer(clientconfig.Server{Command: exe, Args: clientconfig.ServeArgs})
	server.Timeout = 600_000 // aipm's get_next_action may wait
	set(&root, "mcpServers", map[string]qwenServer{clientconfig.ServerName: server})
	if _, err := clientconfig.MergeHooks(&root, hookEvents(hookWord)); err != nil {
		return nil, err
	}
	set(&root, "privacy", map[string]bool{"usageStatisticsEnabled": false})
	set(&root, "general", map[string]any{"enableAutoUpdate": false})
	return clientconfig.Indented(root)
}

// urlDoc is the mcpServers entry for aipm serve --http at url, its
// bearer token read from the variable tokenVar (Qwen Code expands $VAR in
// its settings).
func urlDoc(url, tokenVar string) ([]byte, error) {
	entry := map[string]any{"httpUrl": url, "headers": map[string]string{"Authorization": "Bearer $" + tokenVar}, "trust": true}
	return lockedfile.EncodeDoc(map[string]map[string]any{"mcpServers": {clientconfig.ServerName: entry}})
}

// endpoint is Qwen Code's endpoint for the auth type its arguments
// (--auth-type) or its environment select: anthropic sends to
// $ANTHROPIC_BASE_URL with $ANTHROPIC_API_KEY, openai to $OPENAI_BASE_URL
// with $OPENAI_API_KEY. Another (a Qwen OAuth login, a provider of its
// settings' modelProviders) aipm does not look at.
func endpoint(getenv func(string) string, args []string) clientconfig.Endpoint {
	auth := ""
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--auth-type="); ok {
			auth = v
		} else if a == "--auth-type" && i+1 < len(args) {
			auth = args[i+1]
		}
	}
	if auth == "" {
		switch {
		case getenv("OPENAI_API_KEY") != "" && getenv("OPENAI_BASE_URL") != "":
			auth = "openai"
		case getenv("ANTHROPIC_API_KEY") != "" && getenv("ANTHROPIC_BASE_URL") != "":
			auth = "anthropic"
		}
	}
	vars := map[string][2]string{"anthropic": {"ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"}, "openai": {"OPENAI_BASE_URL", "OPENAI_API_KEY"}}[auth]
	if vars[0] == "" {
		return clientconfig.Endpoint{Unknown: "Qwen Code's auth type is not anthropic or openai with its variables set (its settings, or a Qwen OAuth login, choose it)"}
	}
	e := clientconfig.Endpoint{URL: getenv(vars[0]), From: vars[0]}
	if e.URL == "" {
		return clientconfig.Endpoint{Unknown: fmt.Sprintf("%s is unset, so Qwen Code's settings name its %s endpoint", vars[0], auth)}
	}
	if getenv(vars[1]) != "" {
		e.Credential = vars[1]
		return e
	}
	e.NoCredential = "set " + vars[1] + " in the agent's env or the environment aipm watch runs with"
	return e
}
