package claude

import (
	"encoding/json"
	"path/filepath"
	"strings"

	"aipm/fsstore"
	"aipm/internal/clientconfig"
	"aipm/internal/lockedfile"
)

// The files mcp-config --write merges into, relative to the project.
var (
	mcpFile      = ".mcp.json"
	settingsFile = filepath.Join(".claude", "settings.json")
)

// claudeServer is the entry for Claude Code: without a pinned credential,
// the credential variables expanded from Claude Code's environment
// (${VAR:-} is empty when unset).
func claudeServer(s clientconfig.Server) clientconfig.Server {
	if s.Env == nil && !s.Remote {
		s.Env = map[string]string{}
		for _, v := range clientconfig.CredentialVars {
			s.Env[v] = "${" + v + ":-}"
		}
	}
	return s
}

// configDoc is the .mcp.json document for Claude Code.
func configDoc(s clientconfig.Server) ([]byte, error) {
	return lockedfile.EncodeDoc(map[string]map[string]clientconfig.Server{"mcpServers": {clientconfig.ServerName: claudeServer(s)}})
}

// claudeSettings are the .claude/settings.json keys that let Claude Code
// start the project's server without asking and claude -p call its tools.
const claudeSettingsDoc = `{"enabledMcpjsonServers": ["aipm"], "permissions": {"allow": ["mcp__aipm"]}}`

// note is what mcp-config says of Claude Code's document on stderr.
func note(s clientconfig.Server) string {
	var b strings.Builder
	b.WriteString("aipm: stdout is the .mcp.json document for the project root; aipm mcp-config claude --write merges it\n" +
		"into .mcp.json and enables the server in .claude/settings.json, keeping what else they hold.\n" +
		"The settings .claude/settings.json needs (claude -p asks nothing): " + claudeSettingsDoc + "\n" +
		"--write also merges aipm's hooks (" + clientconfig.HookCommand(s.HookCommand, "claude") + " on " + clientconfig.HookEventNames(hookEvents(s.HookCommand)) + ")\n" +
		"into .claude/settings.json's \"hooks\", so that an interrupt reaches a model that is not calling aipm.\n")
	if s.Env == nil {
		b.WriteString("aipm serve takes the agent's credential from Claude Code's environment, so the passkey never\n" +
			"reaches the model: AIPM_AGENT_ID=coder AIPM_PASSKEY_FILE=$HOME/.config/aipm/coder.key claude\n")
	} else {
		b.WriteString("This entry is for agent " + s.Env[fsstore.EnvAgentID] + " only: use it as .mcp.json or with claude --mcp-config FILE.\n")
	}
	return b.String()
}

// writeFiles merges aipm's server into .mcp.json and enables it in
// .claude/settings.json (the new contents; clientconfig.Write writes them).
func writeFiles(project string, s clientconfig.Server) ([]clientconfig.FileChange, error) {
	entry, err := json.Marshal(claudeServer(s))
	if err != nil {
		return nil, err
	}
	mcp, err := clientconfig.MergeJSONFile(project, mcpFile, func(root *clientconfig.JSONObject) (string, error) {
		return clientconfig.MergeServer(root, "mcpServers", entry)
	})
	if err != nil {
		return nil, err
	}
	settings, err := clientconfig.MergeJSONFile(project, settingsFile, func(root *clientconfig.JSONObject) (string, error) {
		return mergeSettings(root, s.HookCommand)
	})
	return []clientconfig.FileChange{mcp, settings}, err
}

// mergeSettings adds "aipm" to enabledMcpjsonServers,
// "mcp__aipm" to permissions.allow and aipm's hooks (run by command) to
// hooks, keeping everything else.
func mergeSettings(root *clientconfig.JSONObject, command string) (string, error) {
	var done []string
	added, err := clientconfig.AddToList(root, "enabledMcpjsonServers", clientconfig.ServerName)
	if err != nil {
		return "", err
	}
	if added {
		done = append(done, "enabled the aipm server (enabledMcpjsonServers)")
	}
	perms, err := clientconfig.SubObject(*root, "permissions")
	if err != nil {
		return "", err
	}
	added, err = clientconfig.AddToList(&perms, "allow", "mcp__"+clientconfig.ServerName)
	if err != nil {
		return "", err
	}
	if added {
		raw, err := json.Marshal(perms)
		if err != nil {
			return "", err
		}
		root.Set("permissions", raw)
		done = append(done, "allowed its tools (permissions.allow: mcp__aipm)")
	}
	if command == "" { // a remote entry: no hooks
		return clientconfig.JoinAnd(done), nil
	}
	what, err := clientconfig.MergeHooks(root, hookEvents(command))
	if err != nil {
		return "", err
	}
	if what != "" {
		done = append(done, what)
	}
	return clientconfig.JoinAnd(done), nil
}

// hookEvents are aipm's hooks for Claude Code's .claude/settings.json
// (and the watcher's --settings), as the hook contract lists them.
func hookEvents(command string) []clientconfig.HookEvent {
	run := clientconfig.HookCommand(command, "claude")
	one := []clientconfig.HookHandler{{Type: "command", Command: run, Timeout: clientconfig.HookTimeout}}
	wake := clientconfig.HookHandler{Type: "command", Command: run + " --wake", Async: true, AsyncRewake: true, Timeout: 86400}
	return []clientconfig.HookEvent{
		{Name: "SessionStart", Group: clientconfig.HookGroup{Hooks: one}},
		{Name: "UserPromptSubmit", Group: clientconfig.HookGroup{Hooks: one}},
		{Name: "PreToolUse", Group: clientconfig.HookGroup{Matcher: "*", Hooks: one}},
		{Name: "PostToolUse", Group: clientconfig.HookGroup{Matcher: "*", Hooks: one}},
		{Name: "Stop", Group: clientconfig.HookGroup{Hooks: append(one[:1:1], wake)}},
	}
}

// urlDoc is Claude Code's .mcp.json entry for aipm serve --http
// at raw, its bearer token in the variable tokenVar.
func urlDoc(raw, tokenVar string) ([]byte, error) {
	entry := map[string]any{"type": "http", "url": raw, "headers": map[string]string{"Authorization": "Bearer ${" + tokenVar + "}"}}
	return lockedfile.EncodeDoc(map[string]map[string]any{"mcpServers": {clientconfig.ServerName: entry}})
}
