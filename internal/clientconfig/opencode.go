package clientconfig

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"aipm/fsstore"
	"aipm/internal/lockedfile"
)

// OpenCode (1.18.33) reads MCP servers from its config: the user's
// ~/.config/opencode/opencode.json, the project's opencode.json (always:
// OpenCode has no folder trust), and $OPENCODE_CONFIG_CONTENT merged over
// both. It has no command hooks: a plugin's tool.execute.before that
// throws refuses a call, and the model reads the error's text. aipm's
// plugin (opencode_plugin.js) runs aipm's hook command at each event, as
// Claude Code would, and applies its answer; OpenCode loads the files its
// config's "plugin" names. (A plugin in the project's .opencode/plugins/
// would load too, but a .opencode folder is one OpenCode installs its
// plugin SDK into, some 64 MB, at the next run: aipm's plugin is beside
// opencode.json instead.)

// The files mcp-config opencode --write changes, relative to the project,
// and how opencode.json names the plugin (a path-like spec is resolved
// from the config's folder).
const (
	OpenCodeConfigFile = "opencode.json"
	OpenCodePluginFile = "opencode-aipm-hooks.js"
	openCodePluginSpec = "./" + OpenCodePluginFile
)

//go:embed opencode_plugin.js
var openCodePlugin string

// OpenCodePlugin is aipm's plugin for OpenCode, running aipm's hooks with
// command, the word HookWord chose.
func OpenCodePlugin(command string) []byte {
	word, _ := json.Marshal(hookCommand(command, "opencode")) // a string: cannot fail
	return []byte(strings.NewReplacer(
		"AIPM_HOOK_COMMAND", string(word),
		"AIPM_HOOK_TIMEOUT", strconv.Itoa(hookTimeout*1000),
	).Replace(openCodePlugin))
}

// OpenCodeHookEvents are the events aipm's plugin runs the hook at, in
// aipm's names (its hooks are a plugin's functions, not entries).
func OpenCodeHookEvents(command string) []HookEvent {
	one := HookGroup{Hooks: []HookHandler{{Type: "command", Command: hookCommand(command, "opencode"), Timeout: hookTimeout}}}
	return []HookEvent{{"SessionStart", one}, {"UserPromptSubmit", one}, {"PreToolUse", one}, {"PostToolUse", one}}
}

// openCodeServer is aipm's entry under "mcp" for OpenCode: a local
// server, its command line one list.
type openCodeServer struct {
	Type        string            `json:"type"`
	Command     []string          `json:"command"`
	Environment map[string]string `json:"environment,omitempty"`
}

func newOpenCodeServer(s Server) openCodeServer {
	return openCodeServer{Type: "local", Command: append([]string{s.Command}, s.Args...), Environment: s.Env}
}

// OpenCodeConfig is the {"mcp": {"aipm": …}} document for OpenCode.
func OpenCodeConfig(s Server) ([]byte, error) {
	return lockedfile.EncodeDoc(map[string]map[string]openCodeServer{"mcp": {ServerName: newOpenCodeServer(s)}})
}

// OpenCodeNote is what mcp-config opencode says about its document.
func OpenCodeNote(s Server) string {
	var b strings.Builder
	b.WriteString("aipm: stdout is the \"mcp\" entry for OpenCode's opencode.json; aipm mcp-config opencode --write\n" +
		"merges it into the project's opencode.json, keeping what else it holds, with aipm's hooks as an OpenCode plugin\n" +
		"beside it, " + OpenCodePluginFile + " (" + hookCommand(s.HookCommand, "opencode") + " on " + hookEventNames(OpenCodeHookEvents(s.HookCommand)) + ").\n")
	if s.Env == nil {
		b.WriteString("aipm serve takes the agent's credential from OpenCode's environment, so the passkey never\n" +
			"reaches the model: AIPM_AGENT_ID=coder AIPM_PASSKEY_FILE=$HOME/.config/aipm/coder.key opencode\n")
	} else {
		b.WriteString("This entry is for agent " + s.Env[fsstore.EnvAgentID] + " only.\n")
	}
	return b.String()
}

// OpenCodeWrite merges aipm's server into the project's opencode.json and
// writes aipm's plugin (the new contents; writeChanges writes them).
func OpenCodeWrite(project string, s Server) ([]FileChange, error) {
	entry, err := json.Marshal(newOpenCodeServer(s))
	if err != nil {
		return nil, err
	}
	config, err := mergeJSONFile(project, OpenCodeConfigFile, func(root *jsonObject) (string, error) {
		servers, err := subObject(*root, "mcp")
		if err != nil {
			return "", err
		}
		var did []string
		if old, had := servers.get(ServerName); !had || !sameJSON(old, entry) {
			servers.set(ServerName, entry)
			raw, err := json.Marshal(servers)
			if err != nil {
				return "", err
			}
			root.set("mcp", raw)
			did = append(did, map[bool]string{true: "replaced the aipm server's entry", false: "added the aipm server"}[had])
		}
		added, err := addOpenCodePlugin(root, openCodePluginSpec)
		if added {
			did = append(did, "added aipm's plugin")
		}
		return joinAnd(did), err
	})
	if err != nil {
		return nil, err
	}
	plugin, err := wholeFile(project, OpenCodePluginFile, OpenCodePlugin(s.HookCommand), "aipm's hooks")
	if err != nil {
		return nil, err
	}
	return []FileChange{config, plugin}, nil
}

// addOpenCodePlugin appends spec to the config's "plugin" list unless it
// holds it; an entry may be a spec or a [spec, options] pair.
func addOpenCodePlugin(root *jsonObject, spec string) (bool, error) {
	var list []json.RawMessage
	if raw, ok := root.get("plugin"); ok {
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
	root.set("plugin", raw)
	return true, err
}

// OpenCodeLaunchConfig is the config aipm launch gives OpenCode for one
// run ($OPENCODE_CONFIG_CONTENT, merged over the user's own): aipm's
// server (exe serve), aipm's plugin at pluginPath, and permission, the
// access level in OpenCode's terms.
func OpenCodeLaunchConfig(exe, pluginPath string, permission map[string]string) ([]byte, error) {
	return json.Marshal(map[string]any{
		"mcp":        map[string]openCodeServer{ServerName: newOpenCodeServer(Server{Command: exe, Args: ServeArgs})},
		"plugin":     []string{"file://" + pluginPath},
		"permission": permission,
		"autoupdate": false,
		"share":      "disabled",
	})
}

// OpenCodeURLDoc is the "mcp" entry for aipm serve --http at url, its
// bearer token read from the variable tokenVar (OpenCode substitutes
// {env:VAR} in its config).
func OpenCodeURLDoc(url, tokenVar string) ([]byte, error) {
	entry := map[string]any{"type": "remote", "url": url, "headers": map[string]string{"Authorization": "Bearer {env:" + tokenVar + "}"}}
	return lockedfile.EncodeDoc(map[string]map[string]any{"mcp": {ServerName: entry}})
}

// OpenCodeEndpoint: OpenCode's provider and model come from its own config
// (opencode.json's provider and model, its auth.json), which aipm does not
// read.
func OpenCodeEndpoint(func(string) string, []string) Endpoint {
	return Endpoint{Unknown: "OpenCode picks its provider from its own config (opencode.json's provider and model, and opencode auth login)"}
}
