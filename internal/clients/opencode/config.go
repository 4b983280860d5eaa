package opencode

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"aipm/fsstore"
	"aipm/internal/clientconfig"
	"aipm/internal/lockedfile"
)

// OpenCode (1.18.33) reads MCP servers from its config: the user's
// ~/.config/opencode/opencode.json, the project's opencode.json (always:
// OpenCode has no folder trust), and $OPENCODE_CONFIG_CONTENT merged over
// both. It has no command hooks: a plugin's tool.execute.before that
// throws refuses a call, and the model reads the error's text. aipm's
// plugin (plugin.js) runs aipm's hook command at each event, as
// Claude Code would, and applies its answer; OpenCode loads the files its
// config's "plugin" names. (A plugin in the project's .opencode/plugins/
// would load too, but a .opencode folder is one OpenCode installs its
// plugin SDK into, some 64 MB, at the next run: aipm's plugin is beside
// opencode.json instead.)

// The files mcp-config opencode --write changes, relative to the project,
// and how opencode.json names the plugin (a path-like spec is resolved
// from the config's folder).
const (
	configFile = "opencode.json"
	pluginFile = "opencode-aipm-hooks.js"
	pluginSpec = "./" + pluginFile
)

//go:embed plugin.js
var pluginSource string

// plugin is aipm's plugin for OpenCode, running aipm's hooks with
// command, the word HookWord chose.
func plugin(command string) []byte {
	word, _ := json.Marshal(clientconfig.HookCommand(command, "opencode")) // a string: cannot fail
	return []byte(strings.NewReplacer(
		"AIPM_HOOK_COMMAND", string(word),
		"AIPM_HOOK_TIMEOUT", strconv.Itoa(clientconfig.HookTimeout*1000),
	).Replace(pluginSource))
}

// hookEvents are the events aipm's plugin runs the hook at, in
// aipm's names (its hooks are a plugin's functions, not entries).
func hookEvents(command string) []clientconfig.HookEvent {
	one := clientconfig.HookGroup{Hooks: []clientconfig.HookHandler{{Type: "command", Command: clientconfig.HookCommand(command, "opencode"), Timeout: clientconfig.HookTimeout}}}
	return []clientconfig.HookEvent{{Name: "SessionStart", Group: one}, {Name: "UserPromptSubmit", Group: one}, {Name: "PreToolUse", Group: one}, {Name: "PostToolUse", Group: one}}
}

// openCodeServer is aipm's entry under "mcp" for OpenCode: a local
// server, its command line one list.
type openCodeServer struct {
	Type        string            `json:"type"`
	Command     []string          `json:"command"`
	Environment map[string]string `json:"environment,omitempty"`
}

func newOpenCodeServer(s clientconfig.Server) openCodeServer {
	return openCodeServer{Type: "local", Command: append([]string{s.Command}, s.Args...), Environment: s.Env}
}

// configDoc is the {"mcp": {"aipm": …}} document for OpenCode.
func configDoc(s clientconfig.Server) ([]byte, error) {
	return lockedfile.EncodeDoc(map[string]map[string]openCodeServer{"mcp": {clientconfig.ServerName: newOpenCodeServer(s)}})
}

// note is what mcp-config opencode says about its document.
func note(s clientconfig.Server) string {
	var b strings.Builder
	b.WriteString("aipm: stdout is the \"mcp\" entry for OpenCode's opencode.json; aipm mcp-config opencode --write\n" +
		"merges it into the project's opencode.json, keeping what else it holds, with aipm's hooks as an OpenCode plugin\n" +
		"beside it, " + pluginFile + " (" + clientconfig.HookCommand(s.HookCommand, "opencode") + " on " + clientconfig.HookEventNames(hookEvents(s.HookCommand)) + ").\n")
	if s.Env == nil {
		b.WriteString("aipm serve takes the agent's credential from OpenCode's environment, so the passkey never\n" +
			"reaches the model: AIPM_AGENT_ID=coder AIPM_PASSKEY_FILE=$HOME/.config/aipm/coder.key opencode\n")
	} else {
		b.WriteString("This entry is for agent " + s.Env[fsstore.EnvAgentID] + " only.\n")
	}
	return b.String()
}

// writeFiles merges aipm's server into the project's opencode.json and
// writes aipm's plugin (the new contents; writeChanges writes them).
func writeFiles(project string, s clientconfig.Server) ([]clientconfig.FileChange, error) {
	entry, err := json.Marshal(newOpenCodeServer(s))
	if err != nil {
		return nil, err
	}
	config, err := clientconfig.MergeJSONFile(project, configFile, func(root *clientconfig.JSONObject) (string, error) {
		server, err := clientconfig.MergeServer(root, "mcp", entry)
		if err != nil {
			return "", err
		}
		var did []string
		if server != "" {
			did = append(did, server)
		}
		added, err := addPlugin(root, pluginSpec)
		if added {
			did = append(did, "added aipm's plugin")
		}
		return clientconfig.JoinAnd(did), err
	})
	if err != nil {
		return nil, err
	}
	plugin, err := clientconfig.WholeFile(project, pluginFile, plugin(s.HookCommand), "aipm's hooks")
	if err != nil {
		return nil, err
	}
	return []clientconfig.FileChange{config, plugin}, nil
}

// addPlugin appends spec to the config's "plugin" list unless it
// holds it; an entry may be a spec or a [spec, options] pair.
func addPlugin(root *clientconfig.JSONObject, spec string) (bool, error) {
	var list []json.RawMessage
	if raw, ok := root.Get("plugin"); ok {
		if err := json.Unmarshal(raw, &list); err != nil {
			return false, fmt.Errorf("its \"plugin\" is not a list")
		}
	}
	for _, entry := range list {
		var name string
		var pair []json.RawMessage
		if json.Unmarshal(entry, &pair) == nil && len(pair) > 0 {
			entry = pair[0]
		}
		if json.Unmarshal(entry, &name) == nil && name == spec {
			return false, nil
		}
	}
	item, _ := json.Marshal(spec) // a string: cannot fail
	raw, err := json.Marshal(append(list, item))
	root.Set("plugin", raw)
	return true, err
}

// launchAgent is the agent of OpenCode's aipm launch runs it as (its
// --agent): a primary agent of aipm's whose permission rules are the
// access level's. OpenCode applies an agent's rules after the config's
// own, the last rule that matches winning, so no rule of the user's (a
// "*": "allow" after them) widens them.
const launchAgent = "aipm"

// launchConfig is the config aipm launch gives OpenCode for one
// run ($OPENCODE_CONFIG_CONTENT, merged over the user's own): aipm's
// server (exe serve), aipm's plugin at pluginPath ("" for none), and
// permission, the access level in OpenCode's terms, for its agent
// launchAgent and at the top level.
func launchConfig(exe, pluginPath string, permission map[string]string) ([]byte, error) {
	plugins := []string{}
	if pluginPath != "" {
		plugins = append(plugins, "file://"+pluginPath)
	}
	return json.Marshal(map[string]any{
		"mcp":        map[string]openCodeServer{clientconfig.ServerName: newOpenCodeServer(clientconfig.Server{Command: exe, Args: clientconfig.ServeArgs})},
		"plugin":     plugins,
		"permission": permission,
		"agent": map[string]any{launchAgent: map[string]any{
			"mode": "primary", "description": "an agent of an aipm project, started by aipm launch", "permission": permission,
		}},
		"autoupdate": false,
		"share":      "disabled",
	})
}

// urlDoc is the "mcp" entry for aipm serve --http at url, its
// bearer token read from the variable tokenVar (OpenCode substitutes
// {env:VAR} in its config).
func urlDoc(url, tokenVar string) ([]byte, error) {
	entry := map[string]any{"type": "remote", "url": url, "headers": map[string]string{"Authorization": "Bearer {env:" + tokenVar + "}"}}
	return lockedfile.EncodeDoc(map[string]map[string]any{"mcp": {clientconfig.ServerName: entry}})
}

// endpoint: OpenCode's provider and model come from its own config
// (opencode.json's provider and model, its auth.json), which aipm does not
// read.
func endpoint(func(string) string, []string) clientconfig.Endpoint {
	return clientconfig.Endpoint{Unknown: "OpenCode picks its provider from its own config (opencode.json's provider and model, and opencode auth login)"}
}
