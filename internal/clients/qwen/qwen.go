// Package qwen is Qwen Code (@qwen-code/qwen-code) to aipm, whole: its
// Client for the registry (internal/clients).
//
//   - qwen.go: the Client; its command line (qwen -p, with a system
//     settings file of aipm's), its hooks' dialect, what each access level
//     lets it do, its JSON answer read for the calls it refused.
//   - config.go: mcp-config's entry, its note, --write's merge into
//     .qwen/settings.json, the system settings aipm launch gives it, the
//     entry for aipm serve --http, and its model endpoint.
//   - trust.go: whether Qwen Code will leave aipm's server out (its
//     mcpApprovals.json).
package qwen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"aipm/internal/clientconfig"
	"aipm/internal/clients/clientkit"
)

// Client is Qwen Code (@qwen-code/qwen-code), started as qwen -p: a fork
// of Gemini CLI with Claude Code's hooks. No flag adds a hook, so aipm
// launch gives it a system settings file of aipm's
// (QWEN_CODE_SYSTEM_SETTINGS_PATH, under the agent's StateDir) holding
// aipm's server, trusted, and its hooks; --allowed-mcp-server-names keeps
// the user's own servers out. The user's ~/.qwen is read (their model
// settings) but never written by aipm. Its folder trust is off by default,
// and a system file's server needs no approval, so a folder it never saw
// is no obstacle.
var Client = clientkit.Client{
	Name: "qwen", Title: "Qwen Code", Program: "qwen",
	Package: "@qwen-code/qwen-code", Tested: "0.24.4",
	Install: "install Qwen Code (npm install -g @qwen-code/qwen-code)",
	Launch:  qwenLaunch,
	Output:  newQwenOutput,
	Hooks:   qwenDialect,
	Config: clientkit.Config{Doc: configDoc, Note: note, Write: writeFiles,
		URLDoc: urlDoc},
	Trust:    trust,
	Endpoint: endpoint,
	// Qwen Code names an MCP tool mcp__<server>__<tool>, as Claude Code.
	ToolName:  func(tool string) string { return qwenOwnToolPrefix + tool },
	May:       qwenMay,
	RefusedBy: "its approval mode",
	Widen: func(set string, _ clientkit.Run, _ []string, _ bool) string {
		return set + " --access full lets it do anything (--approval-mode yolo), or check its log for what it tried"
	},
}

// qwenOwnToolPrefix starts the names Qwen Code gives aipm's tools.
const qwenOwnToolPrefix = "mcp__" + clientconfig.ServerName + "__"

// qwenDialect: Qwen Code's hooks (its hooks reference, and 0.24.4's
// hook output classes): Claude Code's event names and answers
// (hookSpecificOutput.permissionDecision "deny" refuses a call, its
// reason shown to the model; additionalContext is added, with < and >
// escaped; a Stop {"decision":"block"} keeps it working); write_file,
// edit and notebook_edit its file-writing tools.
var qwenDialect = clientkit.Dialect{
	Entries:       hookEvents,
	Events:        clientkit.SameEvents(),
	NoWake:        "--wake is for Claude Code's asyncRewake Stop hook; Qwen Code has no such hook, so leave --wake out with --client qwen",
	OwnToolPrefix: qwenOwnToolPrefix,
	WritingTools: map[string]func(json.RawMessage) []string{
		"write_file":    clientkit.FileField("file_path"),
		"edit":          clientkit.FileField("file_path"),
		"notebook_edit": clientkit.FileField("notebook_path"),
	},
	Deny:    clientkit.JSONDeny,
	Context: clientkit.JSONContext,
	Block:   clientkit.JSONBlock,
}

// qwenApproval is Qwen Code's approval mode for each access level, as
// measured with 0.24.4 headless: default offers neither write_file nor
// run_shell_command (and refuses a call of them: permission_denials);
// auto-edit adds write_file, edit and notebook_edit, but no shell, which
// --allowed-tools run_shell_command adds (not sandboxed: Qwen Code's own
// sandbox is a setting aipm does not make); yolo allows everything.
// aipm's server, trusted, runs without asking in each.
var qwenApproval = map[string][]string{
	clientkit.AccessRead:    {"--approval-mode", "default"},
	clientkit.AccessProject: {"--approval-mode", "auto-edit", "--allowed-tools", "run_shell_command"},
	clientkit.AccessFull:    {"--approval-mode", "yolo"},
}

// qwenLaunch: qwen -p in the project with the system settings of aipm's
// (its server and hooks), the user's MCP servers left out, the access
// level as an approval mode, and its one JSON answer (-o json), which aipm
// launch reads (qwenOutput).
func qwenLaunch(r clientkit.Run) clientkit.Command {
	args := append([]string{"-p", r.Prompt, "--output-format", "json", "--allowed-mcp-server-names", clientconfig.ServerName},
		qwenApproval[r.Access]...)
	if r.Model != "" {
		args = append(args, "--model", r.Model)
	}
	args = append(args, r.Extra...)
	cmd := clientkit.Command{Args: args, Env: []string{"QWEN_CODE_SUPPRESS_YOLO_WARNING=1"}}
	if r.StateDir == "" {
		return cmd
	}
	settings, err := launchSettings(r.Exe, r.HookWord)
	if err != nil {
		return cmd // not reached: the settings are strings and lists
	}
	path := systemSettings(r.StateDir)
	cmd.Env = append(cmd.Env, "QWEN_CODE_SYSTEM_SETTINGS_PATH="+path)
	cmd.Files = []clientkit.File{{Path: path, Data: settings}}
	return cmd
}

// systemSettings is the system settings file aipm launch gives Qwen Code in
// stateDir.
func systemSettings(stateDir string) string { return filepath.Join(stateDir, "settings.json") }

// qwenMay is what each access level lets Qwen Code do.
func qwenMay(access string) string {
	switch access {
	case clientkit.AccessRead:
		return "read the project; no edit, no command"
	case clientkit.AccessFull:
		return "do anything, without asking"
	}
	return "edit files inside the project and run commands (Qwen Code's auto-edit, its shell allowed; no sandbox holds the commands)"
}

// qwenOutput is qwen -p --output-format json's one JSON array of
// messages, read when the client has exited: its result's text for the
// log and its permission_denials, each {tool_name, tool_use_id,
// tool_input}, as Claude Code's. Those include the calls aipm's
// PreToolUse hook denied; aipm launch tells them apart.
type qwenOutput struct {
	log io.Writer
	buf bytes.Buffer
}

func newQwenOutput(_ clientkit.Run, log io.Writer) clientkit.Output { return &qwenOutput{log: log} }

func (q *qwenOutput) Write(p []byte) (int, error) { return q.buf.Write(p) }

// Refusals are the result message's permission_denials.
func (q *qwenOutput) Refusals() []clientkit.Refusal {
	var messages []struct {
		Type    string `json:"type"`
		Result  string `json:"result"`
		Denials []struct {
			Tool string `json:"tool_name"`
			ID   string `json:"tool_use_id"`
		} `json:"permission_denials"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(q.buf.Bytes()), &messages); err != nil {
		q.log.Write(q.buf.Bytes()) // not the JSON answer: pass it on as it is
		return nil
	}
	var out []clientkit.Refusal
	for _, m := range messages {
		if m.Type != "result" {
			continue
		}
		fmt.Fprintln(q.log, m.Result)
		for _, d := range m.Denials {
			out = append(out, clientkit.Refusal{ID: d.ID, Tool: d.Tool})
		}
	}
	return out
}
