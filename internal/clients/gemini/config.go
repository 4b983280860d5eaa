package gemini

import (
	"encoding/json"
	"path/filepath"
	"strings"

	"aipm/fsstore"
	"aipm/internal/clientconfig"
	"aipm/internal/lockedfile"
)

// Gemini CLI (0.61.0) reads MCP servers and hooks only from a settings
// file: the project's .gemini/settings.json (in a trusted folder), the
// user's ~/.gemini/settings.json, or $GEMINI_CLI_HOME/.gemini/settings.json
// when that variable names another home. It gives an MCP server a
// redacted environment (AIPM_PASSKEY_FILE is dropped), so aipm's entry
// names the credential variables in its env as "$VAR", which Gemini CLI
// expands; its hooks get the whole environment.

// settingsFile is where Gemini CLI reads a project's settings.
var settingsFile = filepath.Join(".gemini", "settings.json")

// hookTimeout is how long (milliseconds, Gemini CLI's unit) it lets
// aipm hook answer: HookTimeout seconds.
const hookTimeout = clientconfig.HookTimeout * 1000

// hookEvents are aipm's hooks in Gemini CLI's event names:
// SessionStart, BeforeAgent (aipm's UserPromptSubmit), BeforeTool and
// AfterTool (PreToolUse, PostToolUse, every tool: no matcher), AfterAgent
// (Stop).
func hookEvents(command string) []clientconfig.HookEvent {
	one := []clientconfig.HookHandler{{Type: "command", Command: clientconfig.HookCommand(command, "gemini"), Timeout: hookTimeout}}
	return []clientconfig.HookEvent{
		{Name: "SessionStart", Group: clientconfig.HookGroup{Hooks: one}},
		{Name: "BeforeAgent", Group: clientconfig.HookGroup{Hooks: one}},
		{Name: "BeforeTool", Group: clientconfig.HookGroup{Hooks: one}},
		{Name: "AfterTool", Group: clientconfig.HookGroup{Hooks: one}},
		{Name: "AfterAgent", Group: clientconfig.HookGroup{Hooks: one}},
	}
}

// geminiServer is aipm's mcpServers entry for Gemini CLI: trusted (its
// tools run without a confirmation, which gemini -p cannot give), the
// credential variables passed by name (envVars: those to pass; nil, the
// one a user sets, AIPM_AGENT_ID and AIPM_PASSKEY_FILE).
type geminiServer struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
	Trust   bool              `json:"trust"`
	Timeout int               `json:"timeout,omitempty"` // milliseconds a tool call may take
}

func newGeminiServer(s clientconfig.Server, envVars []string) geminiServer {
	env := s.Env
	if env == nil && !s.Remote {
		if envVars == nil {
			envVars = []string{fsstore.EnvAgentID, fsstore.EnvPasskeyFile}
		}
		env = map[string]string{}
		for _, v := range envVars {
			env[v] = "$" + v
		}
	}
	return geminiServer{Command: s.Command, Args: s.Args, Env: env, Trust: true}
}

// configDoc is the {"mcpServers": {"aipm": …}} document for Gemini CLI.
func configDoc(s clientconfig.Server) ([]byte, error) {
	return lockedfile.EncodeDoc(map[string]map[string]geminiServer{"mcpServers": {clientconfig.ServerName: newGeminiServer(s, nil)}})
}

// note is what mcp-config gemini says about its document.
func note(s clientconfig.Server) string {
	var b strings.Builder
	b.WriteString("aipm: stdout is the \"mcpServers\" entry for Gemini CLI's .gemini/settings.json; aipm mcp-config gemini --write\n" +
		"merges it into the project's .gemini/settings.json with aipm's hooks (" + clientconfig.HookCommand(s.HookCommand, "gemini") + " on " +
		clientconfig.HookEventNames(hookEvents(s.HookCommand)) + "), keeping what else it holds.\n" +
		"Gemini CLI reads a project's settings only in a folder it trusts (its /permissions, or trustedFolders.json).\n")
	if s.Env == nil {
		b.WriteString("aipm serve takes the agent's credential from Gemini CLI's environment, so the passkey never\n" +
			"reaches the model: AIPM_AGENT_ID=coder AIPM_PASSKEY_FILE=$HOME/.config/aipm/coder.key gemini\n")
	}
	return b.String()
}

// writeFiles merges aipm's server and hooks into the project's
// .gemini/settings.json (the new content; clientconfig.Write writes it).
func writeFiles(project string, s clientconfig.Server) ([]clientconfig.FileChange, error) {
	entry, err := json.Marshal(newGeminiServer(s, nil))
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

// launchSettings is the whole settings.json of the Gemini CLI home
// aipm launch makes for one run (GEMINI_CLI_HOME): aipm's server (exe
// serve, the credential variables envVars passed by name), its hooks (run
// by hookWord), the model endpoint's auth type (authType, "" for none:
// Gemini CLI then asks for one, and fails headless), and usage
// statistics and update checks off.
func launchSettings(exe, hookWord, authType string, envVars []string) ([]byte, error) {
	var root clientconfig.JSONObject
	set := func(o *clientconfig.JSONObject, key string, v any) error {
		raw, err := json.Marshal(v)
		o.Set(key, raw)
		return err
	}
	server := newGeminiServer(clientconfig.Server{Command: exe, Args: clientconfig.ServeArgs}, envVars)
	server.Timeout = 600_000 // aipm's get_next_action may wait; Gemini CLI's default is 10 minutes too
	if err := set(&root, "mcpServers", map[string]geminiServer{clientconfig.ServerName: server}); err != nil {
		return nil, err
	}
	if _, err := clientconfig.MergeHooks(&root, hookEvents(hookWord)); err != nil {
		return nil, err
	}
	if authType != "" {
		set(&root, "security", map[string]any{"auth": map[string]string{"selectedType": authType}})
	}
	set(&root, "privacy", map[string]bool{"usageStatisticsEnabled": false})
	// No update check or auto-update: aipm pins what it tested.
	set(&root, "general", map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false})
	return clientconfig.Indented(root)
}

// urlDoc is the mcpServers entry for aipm serve --http at url, its
// bearer token read from the variable tokenVar (Gemini CLI expands $VAR
// in its settings).
func urlDoc(url, tokenVar string) ([]byte, error) {
	entry := map[string]any{"httpUrl": url, "headers": map[string]string{"Authorization": "Bearer $" + tokenVar}, "trust": true}
	return lockedfile.EncodeDoc(map[string]map[string]any{"mcpServers": {clientconfig.ServerName: entry}})
}

// authType is the security.auth.selectedType Gemini CLI needs for
// the credential getenv holds: gemini-api-key for GEMINI_API_KEY,
// vertex-ai for GOOGLE_GENAI_USE_VERTEXAI=true; "" for none (a Google
// login, oauth-personal, lives in the user's ~/.gemini, which aipm
// launch's home does not hold).
func authType(getenv func(string) string) string {
	switch {
	case getenv("GEMINI_API_KEY") != "":
		return "gemini-api-key"
	case getenv("GOOGLE_GENAI_USE_VERTEXAI") == "true":
		return "vertex-ai"
	}
	return ""
}

// endpoint is Gemini CLI's endpoint: it sends to
// $GOOGLE_GEMINI_BASE_URL, by default
// https://generativelanguage.googleapis.com, with $GEMINI_API_KEY (and
// security.auth.selectedType "gemini-api-key", which aipm launch sets);
// Vertex AI (GOOGLE_GENAI_USE_VERTEXAI=true) is not looked at.
func endpoint(getenv func(string) string) clientconfig.Endpoint {
	if getenv("GOOGLE_GENAI_USE_VERTEXAI") == "true" {
		return clientconfig.Endpoint{Unknown: "GOOGLE_GENAI_USE_VERTEXAI points it at Vertex AI"}
	}
	e := clientconfig.Endpoint{URL: getenv("GOOGLE_GEMINI_BASE_URL"), From: "GOOGLE_GEMINI_BASE_URL"}
	if e.URL == "" {
		e.URL, e.From = "https://generativelanguage.googleapis.com", "the default: GOOGLE_GEMINI_BASE_URL is unset"
	}
	if getenv("GEMINI_API_KEY") != "" {
		e.Credential = "GEMINI_API_KEY"
		return e
	}
	e.NoCredential = "set GEMINI_API_KEY in the agent's env or the environment aipm watch runs with: aipm launch starts Gemini CLI with a home of aipm's, " +
		"so a Google login saved by gemini (~/.gemini) is not used (create a key at aistudio.google.com)"
	return e
}
