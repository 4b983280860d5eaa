// Package gemini is Gemini CLI (@google/gemini-cli) to aipm, whole: its
// Client for the registry (internal/clients).
//
//   - gemini.go: the Client; its command line (gemini -p, with a home of
//     aipm's), its hooks' dialect (its own event names), what each access
//     level lets it do.
//   - output.go: its stream-json events, read for the calls it refused.
//   - config.go: mcp-config's entry, its note, --write's merge into
//     .gemini/settings.json, the settings of the home aipm launch gives it,
//     the entry for aipm serve --http, and its model endpoint.
//   - trust.go: whether Gemini CLI will ignore the project's settings (its
//     trustedFolders.json).
package gemini

import (
	"encoding/json"
	"path/filepath"

	"aipm/fsstore"
	"aipm/internal/clientconfig"
	"aipm/internal/clients/clientkit"
)

// Client is Gemini CLI (@google/gemini-cli), started as gemini -p. No flag
// adds an MCP server or a hook: it reads them only from settings files.
// aipm launch gives it a home of aipm's (GEMINI_CLI_HOME, under the
// agent's StateDir) whose .gemini/settings.json holds aipm's server and
// hooks, the auth type of the endpoint the environment names, and usage
// statistics off; the user's own ~/.gemini is neither read nor written.
// The project is trusted for the run (GEMINI_CLI_TRUST_WORKSPACE=true:
// without it gemini -p exits 55 in a folder it never trusted).
var Client = clientkit.Client{
	Name: "gemini", Title: "Gemini CLI", Program: "gemini",
	Package: "@google/gemini-cli", Tested: "0.61.0",
	Install: "install Gemini CLI (npm install -g @google/gemini-cli)",
	Launch:  geminiLaunch,
	Output:  newGeminiOutput,
	Hooks:   geminiDialect,
	Config: clientkit.Config{Doc: configDoc, Note: note, Write: writeFiles,
		URLDoc: urlDoc},
	Trust: trust,
	Endpoint: func(getenv func(string) string, _ []string) clientconfig.Endpoint {
		return endpoint(getenv)
	},
	// Gemini CLI names an MCP tool mcp_<server>_<tool>.
	ToolName:  func(tool string) string { return geminiOwnToolPrefix + tool },
	May:       geminiMay,
	RefusedBy: "its approval mode",
	Widen: func(set string, _ clientkit.Run, _ []string, _ bool) string {
		return set + " --access full lets it run commands too (--yolo: Gemini CLI has no sandbox of its own here), or check its log for what it tried"
	},
}

// geminiOwnToolPrefix starts the names Gemini CLI gives aipm's tools.
const geminiOwnToolPrefix = "mcp_" + clientconfig.ServerName + "_"

// geminiDialect: Gemini CLI's hooks (its hooks reference): its events
// under its own names, aipm's tools as mcp_aipm_<tool>, write_file and
// replace its file-writing tools. It reads Claude Code's answers for
// context and for keeping the model working (an AfterAgent {"decision":
// "block"}: its reason becomes the next prompt), but refuses a tool call
// only by {"decision":"deny","reason":…} (the model reads "Tool execution
// blocked: <reason>"); Claude Code's permissionDecision is ignored.
var geminiDialect = clientkit.Dialect{
	Entries:       hookEvents,
	Events:        geminiEvents,
	NoWake:        "--wake is for Claude Code's asyncRewake Stop hook; Gemini CLI has no idle event, so leave --wake out with --client gemini",
	OwnToolPrefix: geminiOwnToolPrefix,
	WritingTools: map[string]func(json.RawMessage) []string{
		"write_file": clientkit.FileField("file_path"),
		"replace":    clientkit.FileField("file_path"),
	},
	Deny: func(reason string) clientkit.Answer {
		return clientkit.EncodeAnswer(clientkit.HookOutput{Decision: "deny", Reason: reason})
	},
	Context: func(event, text string) clientkit.Answer { return clientkit.JSONContext(geminiEventName(event), text) },
	Block:   clientkit.JSONBlock,
}

// geminiEvents are aipm's names of Gemini CLI's hook events.
var geminiEvents = map[string]string{
	"SessionStart": clientkit.SessionStart,
	"BeforeAgent":  clientkit.UserPromptSubmit,
	"BeforeTool":   clientkit.PreToolUse,
	"AfterTool":    clientkit.PostToolUse,
	"AfterAgent":   clientkit.Stop,
}

// geminiEventName is Gemini CLI's name of aipm's event.
func geminiEventName(event string) string {
	for name, e := range geminiEvents {
		if e == event {
			return name
		}
	}
	return event
}

// geminiApproval is Gemini CLI's approval mode for each access level, as
// measured with 0.61.0 headless: default offers neither write_file nor
// run_shell_command (aipm's server, trusted, runs without asking);
// auto_edit adds write_file and replace, inside the workspace only, but
// no shell, which aipm's policy adds under project (geminiPolicy); --yolo
// allows everything. Plan mode drops MCP tools.
var geminiApproval = map[string][]string{
	clientkit.AccessRead:    {"--approval-mode", "default"},
	clientkit.AccessProject: {"--approval-mode", "auto_edit"},
	clientkit.AccessFull:    {"--yolo"},
}

// geminiPolicy is the policy file (its policy engine's TOML) of the home
// aipm launch gives Gemini CLI, for each access level: under project,
// run_shell_command allowed (not sandboxed: Gemini CLI's sandbox is a
// container aipm does not make), which auto_edit leaves out. It is
// written at every run, so that a narrower access replaces a wider one's,
// and is the only file of its folder (Command.Owned).
var geminiPolicy = map[string]string{
	clientkit.AccessRead: "# aipm launch, --access read: no rule of aipm's.\n",
	clientkit.AccessProject: "# aipm launch, --access project: commands run without asking.\n" +
		"[[rule]]\ntoolName = \"run_shell_command\"\ndecision = \"allow\"\npriority = 100\n",
	clientkit.AccessFull: "# aipm launch, --access full: --yolo allows everything.\n",
}

// geminiLaunch: gemini -p in the project, trusted for the run, with a
// home of aipm's whose settings hold aipm's server and hooks; the access
// level as an approval mode; its events as JSON lines (stream-json),
// which aipm launch reads (geminiOutput).
func geminiLaunch(r clientkit.Run) clientkit.Command {
	args := append([]string{"-p", r.Prompt, "--output-format", "stream-json"}, geminiApproval[r.Access]...)
	if r.Model != "" {
		args = append(args, "--model", r.Model)
	}
	args = append(args, r.Extra...)
	cmd := clientkit.Command{Args: args, Env: []string{"GEMINI_CLI_TRUST_WORKSPACE=true"}}
	if r.StateDir == "" {
		return cmd
	}
	home := launchHome(r.StateDir)
	// Gemini CLI gives an MCP server a redacted environment, without
	// AIPM_PASSKEY_FILE: the entry names the credential to pass.
	vars := []string{fsstore.EnvAgentID, fsstore.EnvPasskeyFile}
	if r.Getenv(fsstore.EnvPasskey) != "" && r.Getenv(fsstore.EnvPasskeyFile) == "" {
		vars = []string{fsstore.EnvAgentID, fsstore.EnvPasskey}
	}
	settings, err := launchSettings(r.Exe, r.HookWord, authType(r.Getenv), vars)
	if err != nil {
		return cmd // not reached: the settings are strings and lists
	}
	cmd.Env = append(cmd.Env, "GEMINI_CLI_HOME="+home)
	cmd.Files = []clientkit.File{
		{Path: filepath.Join(home, settingsFile), Data: settings},
		{Path: filepath.Join(home, ".gemini", "policies", "aipm.toml"), Data: []byte(geminiPolicy[r.Access])},
	}
	// Gemini CLI loads every policy file there: aipm's alone.
	cmd.Owned = []string{filepath.Join(home, ".gemini", "policies")}
	return cmd
}

// launchHome is the home aipm launch gives Gemini CLI in stateDir.
func launchHome(stateDir string) string { return filepath.Join(stateDir, "home") }

// geminiMay is what each access level lets Gemini CLI do.
func geminiMay(access string) string {
	switch access {
	case clientkit.AccessRead:
		return "read the project; no edit, no command"
	case clientkit.AccessFull:
		return "do anything, without asking"
	}
	return "edit files inside the project and run commands (Gemini CLI's auto_edit, and its shell allowed by aipm's policy; no sandbox holds the commands)"
}
