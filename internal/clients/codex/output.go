package codex

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"aipm/internal/clients/clientkit"
)

// codexOutput reads codex exec --json: one JSON event a line (Codex's
// exec_events: thread.started {thread_id}; item.started, item.updated,
// item.completed {item: {id, type, ...}}; turn.started, turn.completed,
// turn.failed {error: {message}}; error {message}). The run's log gets
// the agent's messages, Codex's errors and a line per command, as they
// come.
//
// Codex 0.171.0's events leave out what its sandbox refused: a command
// that fails for a write the sandbox stops ("Read-only file system") and
// a rejected apply_patch ("patch rejected: writing is blocked by
// read-only sandbox") have no item at all. Its session record has them:
// $CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread_id>.jsonl, the
// model's calls and their outputs as the Responses API's items
// ({type: "response_item", payload: {type: "function_call", name,
// call_id} or {type: "function_call_output", call_id, output}}). Once
// Codex has exited, the refusals are read there; where that record cannot
// be found, from the events (a command whose output shows a refused
// write, a file change that failed, a declined command).
type codexOutput struct {
	*clientkit.Lines
	access string
	log    io.Writer
	getenv func(string) string
	thread string              // thread.started's thread_id
	seen   []clientkit.Refusal // what the events showed
}

func newCodexOutput(r clientkit.Run, log io.Writer) clientkit.Output {
	c := &codexOutput{access: r.Access, log: log, getenv: r.Getenv}
	c.Lines = clientkit.NewLines(c.line)
	return c
}

// codexEvent is the part of a codex exec --json event aipm reads.
type codexEvent struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Message  string `json:"message"`
	Error    struct {
		Message string `json:"message"`
	} `json:"error"`
	Item struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Text     string `json:"text"`
		Message  string `json:"message"`
		Command  string `json:"command"`
		Output   string `json:"aggregated_output"`
		ExitCode *int   `json:"exit_code"`
		Status   string `json:"status"`
		Changes  []struct {
			Path string `json:"path"`
			Kind string `json:"kind"`
		} `json:"changes"`
	} `json:"item"`
}

// line handles one line of Codex's stdout: an event, or text passed on.
func (c *codexOutput) line(line []byte) {
	var ev codexEvent
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	if json.Unmarshal(line, &ev) != nil || ev.Type == "" {
		fmt.Fprintf(c.log, "%s\n", line)
		return
	}
	it := ev.Item
	switch ev.Type {
	case "thread.started":
		c.thread = ev.ThreadID
	case "turn.failed":
		fmt.Fprintf(c.log, "codex: the turn failed: %s\n", ev.Error.Message)
	case "error":
		fmt.Fprintf(c.log, "codex: %s\n", ev.Message)
	case "item.completed":
		switch it.Type {
		case "agent_message":
			fmt.Fprintln(c.log, it.Text)
		case "error":
			fmt.Fprintf(c.log, "codex: %s\n", it.Message)
		case "command_execution":
			code := "no exit code"
			if it.ExitCode != nil {
				code = fmt.Sprintf("exit %d", *it.ExitCode)
			}
			fmt.Fprintf(c.log, "codex ran %s: %s (%s)\n", it.Command, code, it.Status)
			switch {
			case it.Status == "declined":
				c.seen = append(c.seen, clientkit.Refusal{Tool: "a command", Said: "declined"})
			case c.sandboxed():
				if said := refusedWrite(it.Output); said != "" {
					c.seen = append(c.seen, clientkit.Refusal{Tool: "a command", Said: said})
				}
			}
		case "file_change":
			var files []string
			for _, ch := range it.Changes {
				files = append(files, ch.Kind+" "+ch.Path)
			}
			fmt.Fprintf(c.log, "codex changed files (%s): %s\n", it.Status, strings.Join(files, ", "))
			if it.Status == "failed" && c.sandboxed() {
				c.seen = append(c.seen, clientkit.Refusal{Tool: "apply_patch", Said: "the patch failed"})
			}
		}
	}
}

// sandboxed says whether Codex ran in a sandbox (--access read or
// project): only then is a refused write its sandbox's refusal.
func (c *codexOutput) sandboxed() bool { return c.access != clientkit.AccessFull }

func (c *codexOutput) Refusals() []clientkit.Refusal {
	c.Done(func() {})
	if !c.sandboxed() {
		return nil
	}
	if recorded, ok := c.recorded(); ok {
		return recorded
	}
	return c.seen
}

// The tools of Codex's own that run commands or write files (the call's
// name in its session record): their outputs are looked at for what the
// sandbox refused. Nothing else is (an MCP tool's text may say anything).
var codexWritingTools = map[string]bool{
	"exec_command": true, "write_stdin": true, "shell": true, "shell_command": true, "local_shell": true,
	"apply_patch": true, "exec": true,
}

// recorded reads the refusals from Codex's record of the session (see
// codexOutput); ok is false when it cannot be found or read.
func (c *codexOutput) recorded() (refused []clientkit.Refusal, ok bool) {
	path := c.rollout()
	if path == "" {
		return nil, false
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	names := map[string]string{} // call id -> tool
	dec := json.NewDecoder(f)
	for {
		var rec struct {
			Type    string `json:"type"`
			Payload struct {
				Type   string          `json:"type"`
				Name   string          `json:"name"`
				CallID string          `json:"call_id"`
				Output json.RawMessage `json:"output"`
			} `json:"payload"`
		}
		if err := dec.Decode(&rec); err != nil {
			// The end, or a line cut short by a Codex that was killed: what
			// was read stands, unless nothing of it was a call.
			return refused, err == io.EOF || len(names) > 0
		}
		p := rec.Payload
		if rec.Type != "response_item" {
			continue
		}
		switch p.Type {
		case "function_call", "custom_tool_call", "local_shell_call":
			names[p.CallID] = p.Name
			if p.Type == "local_shell_call" {
				names[p.CallID] = "local_shell"
			}
		case "function_call_output", "custom_tool_call_output":
			tool := names[p.CallID]
			if !codexWritingTools[tool] {
				continue
			}
			text := outputText(p.Output)
			if rest, ok := strings.CutPrefix(text, "patch rejected: "); ok {
				said, _, _ := strings.Cut(rest, ";")
				refused = append(refused, clientkit.Refusal{ID: p.CallID, Tool: "apply_patch", Said: strings.TrimSpace(said)})
				continue
			}
			if said := refusedWrite(text); said != "" {
				if tool != "apply_patch" {
					tool = "a command"
				}
				refused = append(refused, clientkit.Refusal{ID: p.CallID, Tool: tool, Said: said})
			}
		}
	}
}

// outputText is a tool output's text: a JSON string, or the text items of
// a list of content items, or the JSON itself.
func outputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var items []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &items) == nil {
		var b strings.Builder
		for _, it := range items {
			b.WriteString(it.Text)
		}
		return b.String()
	}
	return string(raw)
}

// refusedWrite is what output says of a write a sandbox refused ("" for
// none): the errors Codex's Linux sandbox (a read-only bind, seccomp)
// gives a write outside what it may write. "Permission denied" is left
// out: it is as often a file's own mode.
func refusedWrite(output string) string {
	for _, said := range []string{"Read-only file system", "Operation not permitted"} {
		if strings.Contains(output, said) {
			return said
		}
	}
	return ""
}

// rollout is the path of Codex's record of the session thread (""
// when there is none): $CODEX_HOME/sessions/YYYY/MM/DD/rollout-*-<thread>.jsonl,
// CODEX_HOME defaulting to ~/.codex.
func (c *codexOutput) rollout() string {
	if c.thread == "" || strings.ContainsFunc(c.thread, notIDRune) {
		return ""
	}
	matches, _ := filepath.Glob(filepath.Join(codexHome(c.getenv), "sessions", "*", "*", "*", "rollout-*-"+c.thread+".jsonl"))
	if len(matches) == 0 {
		return ""
	}
	return matches[len(matches)-1]
}

// notIDRune says whether r cannot be in a thread id (a UUID): the id is
// part of a glob.
func notIDRune(r rune) bool {
	return !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
}
