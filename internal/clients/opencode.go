package clients

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"aipm/internal/clientconfig"
)

// OpenCode (opencode-ai), started as opencode run. No flag adds an MCP
// server or a hook: aipm launch gives it a config of aipm's in
// $OPENCODE_CONFIG_CONTENT, merged over the user's own (their provider
// and model stay theirs): aipm's server, aipm's plugin (its hooks, a file
// in the agent's StateDir) and the access level as OpenCode's permission
// rules. OpenCode has no folder trust: a folder it never saw is no
// obstacle.
func init() {
	register(Client{
		Name: "opencode", Title: "OpenCode", Program: "opencode",
		Package: "opencode-ai", Tested: "1.18.33",
		Install: "install OpenCode (npm install -g opencode-ai)",
		Launch:  openCodeLaunch,
		Output:  newOpenCodeOutput,
		Hooks:   openCodeDialect,
		Config: Config{Doc: clientconfig.OpenCodeConfig, Note: clientconfig.OpenCodeNote, Write: clientconfig.OpenCodeWrite,
			URLDoc: clientconfig.OpenCodeURLDoc},
		Trust:    openCodeTrust,
		Endpoint: clientconfig.OpenCodeEndpoint,
		// OpenCode names an MCP tool <server>_<tool>.
		ToolName:  func(tool string) string { return openCodeOwnToolPrefix + tool },
		May:       openCodeMay,
		RefusedBy: "its permission rules",
		Widen: func(set string, _ Run, _ []string, _ bool) string {
			return set + " --access full lets it do anything, outside the project too, or check its log for what it tried"
		},
	})
}

// openCodeOwnToolPrefix starts the names OpenCode gives aipm's tools.
const openCodeOwnToolPrefix = clientconfig.ServerName + "_"

// openCodeDialect: aipm's plugin for OpenCode (clientconfig.OpenCodePlugin)
// sends aipm's event names with Claude Code's input (OpenCode's tool
// name, its call's id and arguments) and reads Claude Code's answers: a
// deny throws at tool.execute.before, and the model reads the reason;
// PostToolUse context is added to the tool's output, SessionStart's and
// UserPromptSubmit's to the session's system prompt. write and edit are
// its file-writing tools (filePath), apply_patch for the models it gives
// that (patchText).
var openCodeDialect = Dialect{
	Entries: clientconfig.OpenCodeHookEvents,
	Events:  sameEvents(),
	Unsupported: map[string]string{
		Stop: "an OpenCode plugin cannot keep a session working (session.idle is only an event)",
	},
	NoWake:        "--wake is for Claude Code's asyncRewake Stop hook; OpenCode has no idle hook, so leave --wake out with --client opencode",
	OwnToolPrefix: openCodeOwnToolPrefix,
	WritingTools: map[string]func(json.RawMessage) []string{
		"write":       fileField("filePath"),
		"edit":        fileField("filePath"),
		"apply_patch": openCodePatchFiles,
	},
	Deny:    jsonDeny,
	Context: jsonContext,
	Block:   jsonBlock,
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
	return patchFiles(command)
}

// openCodePermission is OpenCode's permission rules for each access
// level, as measured with 1.18.33 headless (opencode run): edits and
// commands run without asking by default; a rule left at "ask" ends the
// run (nobody answers), so each one aipm sets is allow or deny:
// external_directory (a path outside the project) and doom_loop (a call
// repeated) are denied below full.
var openCodePermission = map[string]map[string]string{
	AccessRead:    {"edit": "deny", "bash": "deny", "external_directory": "deny", "doom_loop": "deny"},
	AccessProject: {"edit": "allow", "bash": "allow", "external_directory": "deny", "doom_loop": "deny"},
	AccessFull:    {"edit": "allow", "bash": "allow", "webfetch": "allow", "external_directory": "allow", "doom_loop": "allow"},
}

// openCodeLaunch: opencode run in the project with the config of aipm's
// (its server, its plugin, the access level as permission rules) and its
// events as JSON lines (--format json), which aipm launch reads
// (openCodeOutput).
func openCodeLaunch(r Run) Command {
	args := []string{"run", "--format", "json"}
	if r.Model != "" {
		args = append(args, "--model", r.Model)
	}
	// The prompt on stdin: opencode run quotes a message argument that
	// holds a space, and escapes its quotes, before the model reads it.
	plugin := ""
	cmd := Command{Args: append(args, r.Extra...), Stdin: r.Prompt}
	if r.StateDir != "" {
		plugin = OpenCodePlugin(r.StateDir)
		cmd.Files = []File{{Path: plugin, Data: clientconfig.OpenCodePlugin(r.HookWord)}}
	}
	config, err := clientconfig.OpenCodeLaunchConfig(r.Exe, plugin, openCodePermission[r.Access])
	if err != nil {
		return cmd // not reached: the config is strings and maps
	}
	cmd.Env = []string{"OPENCODE_CONFIG_CONTENT=" + string(config)}
	return cmd
}

// OpenCodePlugin is the file of aipm's plugin aipm launch gives OpenCode in
// stateDir.
func OpenCodePlugin(stateDir string) string { return filepath.Join(stateDir, "aipm-hooks.js") }

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
	case AccessRead:
		return "read the project; no edit, no command"
	case AccessFull:
		return "do anything, without asking"
	}
	return "edit files inside the project and run commands (no sandbox holds the commands); nothing outside the project"
}

// openCodeOutput reads opencode run --format json: one JSON event a line
// (step_start, text, tool_use, step_finish, error). The text goes to the
// log as it comes. A refused call is, as measured with 1.18.33, a
// tool_use whose state is "error" with the words of a permission rule
// (openCodeRefusals), or its "invalid" tool standing for a call of a tool
// the permission rules left out ("Model tried to call unavailable tool
// 'write'"). A call aipm's plugin denied has aipm's words, and is not
// one.
type openCodeOutput struct {
	log io.Writer

	mu       sync.Mutex
	partial  []byte
	refusals []Refusal
}

// openCodeRefusals start the error of a call OpenCode's permission rules
// refused: a rule's deny, an ask that nobody answered.
var openCodeRefusals = []string{
	"The user has specified a rule which prevents you from using this specific tool call",
	"The user rejected permission to use this specific tool call",
}

// openCodeUnavailable is the error of OpenCode's invalid tool for a call
// of a tool it does not offer.
const openCodeUnavailable = "Model tried to call unavailable tool"

func newOpenCodeOutput(_ Run, log io.Writer) Output { return &openCodeOutput{log: log} }

func (o *openCodeOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.partial = append(o.partial, p...)
	for {
		i := bytes.IndexByte(o.partial, '\n')
		if i < 0 {
			break
		}
		o.line(o.partial[:i+1])
		o.partial = o.partial[i+1:]
	}
	return len(p), nil
}

// openCodeEvent is the part of a --format json event aipm reads.
type openCodeEvent struct {
	Type string `json:"type"`
	Part struct {
		Text   string `json:"text"`
		Tool   string `json:"tool"`
		CallID string `json:"callID"`
		State  struct {
			Status string `json:"status"`
			Error  string `json:"error"`
			Input  struct {
				Tool  string `json:"tool"`  // the invalid tool's: the tool called
				Error string `json:"error"` // and why it was not run
			} `json:"input"`
		} `json:"state"`
	} `json:"part"`
	Error json.RawMessage `json:"error"`
}

func (o *openCodeOutput) line(line []byte) {
	var ev openCodeEvent
	if json.Unmarshal(bytes.TrimSpace(line), &ev) != nil || ev.Type == "" {
		o.log.Write(line)
		return
	}
	switch ev.Type {
	case "text":
		fmt.Fprintln(o.log, ev.Part.Text)
	case "tool_use":
		part := ev.Part
		fmt.Fprintf(o.log, "[%s %s]\n", part.Tool, part.State.Status)
		switch {
		case part.State.Status == "error" && slices.ContainsFunc(openCodeRefusals, func(w string) bool { return strings.HasPrefix(part.State.Error, w) }):
			o.refusals = append(o.refusals, Refusal{ID: part.CallID, Tool: part.Tool})
		case part.Tool == "invalid" && strings.HasPrefix(part.State.Input.Error, openCodeUnavailable):
			o.refusals = append(o.refusals, Refusal{ID: part.CallID, Tool: part.State.Input.Tool,
				Said: "not offered at this access"})
		case part.State.Status == "error":
			fmt.Fprintln(o.log, part.State.Error)
		}
	case "error":
		fmt.Fprintf(o.log, "OpenCode: %s\n", ev.Error)
	}
}

// Refusals are the calls OpenCode refused, once it has exited.
func (o *openCodeOutput) Refusals() []Refusal {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.partial) > 0 {
		o.line(append(o.partial, '\n'))
		o.partial = nil
	}
	return slices.Clone(o.refusals)
}
