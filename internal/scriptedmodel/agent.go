package scriptedmodel

import (
	"encoding/json"
	"regexp"
	"strings"
)

// Agent is a model that follows aipm's words mechanically, the same script
// for every client: it authenticates as the opening prompt says, then does
// what the last instruction aipm gave says (get_next_action's, a tool's,
// or the interrupt a hook's denial carries), calling the first aipm tool
// the instruction names. On a task it works as a model would: it edits
// the file the task's title names with the client's own write tool, runs a
// command with the client's own shell, and reports the task completed; an
// edit refused under another's lease is reported blocked with the refusal.
// In a chat session it answers the first message it is handed and stops.
//
// The client's own tools differ (Claude Code's Write and Bash, Codex's
// apply_patch and exec_command, Gemini CLI's write_file and
// run_shell_command, OpenCode's write and bash, Copilot CLI's create
// and bash): Write and Shell make their
// calls for the request, or say why they cannot.
type Agent struct {
	// Write is the call of the client's own tool that writes content to
	// path (relative to the project), made for r.
	Write func(r *Request, path, content string) (Call, bool)
	// Shell is the call of the client's own tool that runs command.
	Shell func(r *Request, command string) (Call, bool)
	// Command is the command the agent runs on its task ("" for none).
	Command string
	// OnWork, when set, runs as the agent starts its task's work, before
	// its first edit: a test makes a human act there ("while it works").
	OnWork func()
}

// instructionOf is the instruction a tool result carries: a JSON
// result's "instruction", else the text of a hook's denial that carries
// aipm's interrupt. ok is false for a result that carries none.
func instructionOf(text string) (instruction string, fields map[string]any, ok bool) {
	if i := strings.Index(text, "aipm interrupt for "); i >= 0 {
		return text[i:], nil, true
	}
	start := strings.Index(text, "{")
	if start < 0 {
		return "", nil, false
	}
	dec := json.NewDecoder(strings.NewReader(text[start:]))
	if dec.Decode(&fields) != nil {
		return "", nil, false
	}
	if instruction, ok = fields["instruction"].(string); ok {
		return instruction, fields, ok
	}
	// A client that wraps a tool's result in its own object (Gemini CLI:
	// {"output": "<untrusted_context>\n…\n</untrusted_context>"}).
	if inner, isText := fields["output"].(string); isText {
		return instructionOf(inner)
	}
	return "", nil, false
}

// callNamed matches "call TOOL" and "Call TOOL(" in an instruction.
var callNamed = regexp.MustCompile(`(?i)\bcall ([a-z_]+)`)

// resultValue matches the result an instruction gives report_completed.
var resultValue = regexp.MustCompile(`report_completed\(result="([a-z]+)"`)

// fileNamed is the first file name with an extension in a task's title.
var fileNamed = regexp.MustCompile(`[A-Za-z0-9_./-]+\.[A-Za-z0-9]+`)

// agentIDNamed is the agent id in aipm launch's opening prompt.
var agentIDNamed = regexp.MustCompile(`agent_id "([^"]+)"`)

// Script is the agent's script, to Start a server with.
func (a Agent) Script() Script {
	return func(r *Request) Turn {
		if len(aipmTools(r)) == 0 {
			if call, ok := SearchHintCall(r); ok && len(r.Results) == 0 {
				return Turn{Calls: []Call{call}}
			}
			return Turn{Text: "aipm's tools are not offered."} // a title request, or no server
		}
		last, since := -1, 0
		var instruction string
		var fields map[string]any
		for i := len(r.Results) - 1; i >= 0; i-- {
			if text, f, ok := instructionOf(r.Results[i].Text); ok {
				last, instruction, fields, since = i, text, f, len(r.Results)-1-i
				break
			}
		}
		if last < 0 {
			m := agentIDNamed.FindStringSubmatch(r.Text)
			if m == nil {
				return Turn{Text: "The prompt names no agent_id to authenticate as."}
			}
			return a.aipm(r, "authenticate", map[string]any{"agent_id": m[1]})
		}
		token := sessionToken(r)
		if fields["action"] == "work" {
			return a.work(r, token, fields, since)
		}
		if since > 0 {
			return Turn{Text: "Done."} // the instruction's call was made: nothing more to do
		}
		if pending, _ := fields["pending_messages"].([]any); len(pending) > 0 {
			return a.aipm(r, "respond_chat", map[string]any{"session_token": token, "content": "Received: " + messageContent(pending[0])})
		}
		m := callNamed.FindStringSubmatch(instruction)
		if m == nil || strings.Contains(instruction, "then exit") && m[1] != "report_completed" && m[1] != "logout" {
			return Turn{Text: "Done."}
		}
		args := map[string]any{"session_token": token}
		if m[1] == "report_completed" {
			result := "blocked"
			if v := resultValue.FindStringSubmatch(instruction); v != nil {
				result = v[1]
			}
			args["result"], args["summary"] = result, "Stopped as aipm asked: "+clip(instruction, 200)
		}
		return a.aipm(r, m[1], args)
	}
}

// work is the task's work, step by step after get_next_action said to do
// it: the edit, the command, the report.
func (a Agent) work(r *Request, token string, fields map[string]any, since int) Turn {
	task, _ := fields["task"].(map[string]any)
	file := fileNamed.FindString(str(task["title"]))
	if file == "" {
		file = "notes.txt"
	}
	switch since {
	case 0:
		if a.OnWork != nil {
			a.OnWork()
		}
		call, ok := a.Write(r, file, "written by the scripted model for "+str(task["id"])+"\n")
		if !ok {
			return Turn{Text: "The client offers no tool to write " + file + "."}
		}
		return Turn{Calls: []Call{call}}
	case 1:
		if refused := r.Results[len(r.Results)-1].Text; strings.Contains(refused, "is leased exclusively by") {
			return a.aipm(r, "report_completed", map[string]any{"session_token": token, "result": "blocked", "summary": "My edit was refused: " + clip(refused, 300)})
		}
		if a.Command != "" {
			if call, ok := a.Shell(r, a.Command); ok {
				return Turn{Calls: []Call{call}}
			}
		}
		fallthrough
	case 2:
		return a.aipm(r, "report_completed", map[string]any{"session_token": token, "result": "success", "summary": "Wrote " + file + " and ran " + a.Command + "."})
	}
	return Turn{Text: "Done."}
}

// aipm is the call of aipm's tool, named as r offers it.
func (a Agent) aipm(r *Request, tool string, args map[string]any) Turn {
	for _, t := range aipmTools(r) {
		if bareName(t) == tool {
			return Turn{Calls: []Call{{Namespace: t.Namespace, Name: t.Name, Input: args}}}
		}
	}
	return Turn{Text: "aipm's tool " + tool + " is not offered."}
}

// aipmTools are the tools of r that are aipm's, however the client names
// them: mcp__aipm__X (Claude Code), X in the namespace mcp__aipm (Codex),
// mcp_aipm_X (Gemini CLI), aipm_X (OpenCode), aipm-X (GitHub Copilot CLI).
func aipmTools(r *Request) []Tool {
	var out []Tool
	for _, t := range r.Tools {
		if bareName(t) != "" {
			out = append(out, t)
		}
	}
	return out
}

// bareName is aipm's name of t, or "" when t is not aipm's.
func bareName(t Tool) string {
	if strings.Trim(t.Namespace, "_") == "mcp__aipm" {
		return t.Name
	}
	for _, prefix := range []string{"mcp__aipm__", "mcp_aipm_", "aipm_", "aipm-"} {
		if name, ok := strings.CutPrefix(t.Name, prefix); ok {
			return name
		}
	}
	return ""
}

// sessionToken is the session token an authenticate result of r handed.
func sessionToken(r *Request) string {
	for i := len(r.Results) - 1; i >= 0; i-- {
		if _, fields, ok := instructionOf(r.Results[i].Text); ok {
			if token, _ := fields["session_token"].(string); token != "" {
				return token
			}
		}
	}
	return ""
}

func messageContent(m any) string {
	return clip(str(object(m)["content"]), 200)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
