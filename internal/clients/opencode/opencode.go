// Package opencode is OpenCode (opencode-ai) to aipm, whole: its Client
// for the registry (internal/clients).
//
//   - opencode.go: the Client; its command line (opencode run, aipm's
//     config in OPENCODE_CONFIG_CONTENT, the prompt on stdin), its hooks'
//     dialect, its permission rules for each access level.
//   - output.go: its --format json events, read for the calls it refused.
//   - config.go: mcp-config's entry, its note, --write's merge into
//     opencode.json with aipm's plugin beside it, the config aipm launch
//     gives it, the entry for aipm serve --http, and its model endpoint.
//   - plugin.js: aipm's plugin, which runs aipm's hooks inside OpenCode.
package opencode

import (
	"encoding/json"
	"path/filepath"

	"aipm/internal/clientconfig"
	"aipm/internal/clients/clientkit"
)

// Client is OpenCode (opencode-ai), started as opencode run. No flag adds
// an MCP server or a hook: aipm launch gives it a config of aipm's in
// $OPENCODE_CONFIG_CONTENT, merged over the user's own (their provider
// and model stay theirs): aipm's server, aipm's plugin (its hooks, a file
// in the agent's StateDir) and the access level as OpenCode's permission
// rules. OpenCode has no folder trust: a folder it never saw is no
// obstacle.
var Client = clientkit.Client{
	Name: "opencode", Title: "OpenCode", Program: "opencode",
	Package: "opencode-ai", Tested: "1.18.33",
	Install: "install OpenCode (npm install -g opencode-ai)",
	Launch:  openCodeLaunch,
	Output:  newOpenCodeOutput,
	Hooks:   openCodeDialect,
	Config: clientkit.Config{Doc: configDoc, Note: note, Write: writeFiles,
		URLDoc: urlDoc},
	Trust:    openCodeTrust,
	Endpoint: endpoint,
	// OpenCode names an MCP tool <server>_<tool>.
	ToolName:  func(tool string) string { return openCodeOwnToolPrefix + tool },
	May:       openCodeMay,
	RefusedBy: "its permission rules",
	Widen: func(set string, _ clientkit.Run, _ []string, _ bool) string {
		return set + " --access full lets it do anything, outside the project too, or check its log for what it tried"
	},
}

// openCodeOwnToolPrefix starts the names OpenCode gives aipm's tools.
const openCodeOwnToolPrefix = clientconfig.ServerName + "_"

// openCodeDialect: aipm's plugin for OpenCode (plugin)
// sends aipm's event names with Claude Code's input (OpenCode's tool
// name, its call's id and arguments) and reads Claude Code's answers: a
// deny throws at tool.execute.before, and the model reads the reason;
// PostToolUse context is added to the tool's output, SessionStart's and
// UserPromptSubmit's to the session's system prompt. write and edit are
// its file-writing tools (filePath), apply_patch for the models it gives
// that (patchText).
var openCodeDialect = clientkit.Dialect{
	Entries: hookEvents,
	Events: map[string]string{
		clientkit.SessionStart: clientkit.SessionStart, clientkit.UserPromptSubmit: clientkit.UserPromptSubmit,
		clientkit.PreToolUse: clientkit.PreToolUse, clientkit.PostToolUse: clientkit.PostToolUse,
	},
	Unsupported: map[string]string{
		clientkit.Stop: "an OpenCode plugin cannot keep a session working (session.idle is only an event)",
	},
	NoWake:        "--wake is for Claude Code's asyncRewake Stop hook; OpenCode has no idle hook, so leave --wake out with --client opencode",
	OwnToolPrefix: openCodeOwnToolPrefix,
	WritingTools: map[string]func(json.RawMessage) []string{
		"write":       clientkit.FileField("filePath"),
		"edit":        clientkit.FileField("filePath"),
		"apply_patch": openCodePatchFiles,
	},
	Deny:    clientkit.JSONDeny,
	Context: clientkit.JSONContext,
	Block:   clientkit.JSONBlock,
}

// openCodePatchFiles are the files of OpenCode's apply_patch, whose patch
// is Codex's, in patchText.
func openCodePatchFiles(input json.RawMessage) []string {
	var in struct {
		PatchText string `json:"patchText"`
	}
	if json.Unmarshal(input, &in) != nil {
		return nil
	}
	command, _ := json.Marshal(map[string]string{"command": in.PatchText}) // a string: cannot fail
	return clientkit.PatchFiles(command)
}

// openCodePermission is OpenCode's permission rules for each access
// level, as measured with 1.18.33 headless (opencode run): edits and
// commands run without asking by default; a rule left at "ask" ends the
// run (nobody answers), so each one aipm sets is allow or deny:
// external_directory (a path outside the project) and doom_loop (a call
// repeated) are denied below full.
var openCodePermission = map[string]map[string]string{
	clientkit.AccessRead:    {"edit": "deny", "bash": "deny", "external_directory": "deny", "doom_loop": "deny"},
	clientkit.AccessProject: {"edit": "allow", "bash": "allow", "external_directory": "deny", "doom_loop": "deny"},
	clientkit.AccessFull:    {"edit": "allow", "bash": "allow", "webfetch": "allow", "external_directory": "allow", "doom_loop": "allow"},
}

// openCodeLaunch: opencode run in the project with the config of aipm's
// (its server, its plugin, the access level as permission rules) and its
// events as JSON lines (--format json), which aipm launch reads
// (openCodeOutput).
func openCodeLaunch(r clientkit.Run) clientkit.Command {
	args := []string{"run", "--format", "json", "--agent", launchAgent}
	if r.Model != "" {
		args = append(args, "--model", r.Model)
	}
	// The prompt on stdin: opencode run quotes a message argument that
	// holds a space, and escapes its quotes, before the model reads it.
	hooks := ""
	cmd := clientkit.Command{Args: append(args, r.Extra...), Stdin: r.Prompt}
	if r.StateDir != "" {
		hooks = pluginPath(r.StateDir)
		cmd.Files = []clientkit.File{{Path: hooks, Data: plugin(r.HookWord)}}
	}
	config, err := launchConfig(r.Exe, hooks, openCodePermission[r.Access])
	if err != nil {
		return cmd // not reached: the config is strings and maps
	}
	// The project's own opencode.json and .opencode folders are not read:
	// their permission rules, plugins and servers would widen or double
	// aipm's (an agent could write them under --access project for its
	// next run).
	cmd.Env = []string{"OPENCODE_CONFIG_CONTENT=" + string(config), "OPENCODE_DISABLE_PROJECT_CONFIG=1"}
	return cmd
}

// pluginPath is the file of aipm's plugin aipm launch gives OpenCode in
// stateDir.
func pluginPath(stateDir string) string { return filepath.Join(stateDir, "aipm-hooks.js") }

// openCodeTrust: OpenCode reads a project's opencode.json in any folder,
// unless OPENCODE_DISABLE_PROJECT_CONFIG says not to.
func openCodeTrust(getenv func(string) string, _ string) string {
	if v := getenv("OPENCODE_DISABLE_PROJECT_CONFIG"); v != "" && v != "0" && v != "false" {
		return "OPENCODE_DISABLE_PROJECT_CONFIG is set, so OpenCode ignores the project's opencode.json: unset it"
	}
	return ""
}

// openCodeMay is what each access level lets OpenCode do.
func openCodeMay(access string) string {
	switch access {
	case clientkit.AccessRead:
		return "read the project; no edit, no command"
	case clientkit.AccessFull:
		return "do anything, without asking"
	}
	return "edit files inside the project and run commands (no sandbox holds the commands); nothing outside the project"
}
