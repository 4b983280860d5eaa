package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"aipm/internal/clients/clientkit"
)

// geminiOutput reads gemini -p --output-format stream-json: one JSON
// event a line (init, message, tool_use, tool_result, result). The
// assistant's text goes to the log as it comes; a tool_result whose
// error is one of geminiRefusals is a refused call, named by its
// tool_use's tool_id and tool_name. Those include the calls aipm's
// BeforeTool hook denied ("Tool execution blocked: …", policy_violation);
// aipm launch tells them apart. A line that is not an event is passed on
// to the log as it is.
type geminiOutput struct {
	*clientkit.Lines
	log      io.Writer
	tools    map[string]string // tool_id → tool_name
	refusals []clientkit.Refusal
}

// geminiRefusals are the error types of a call Gemini CLI 0.61.0 refused
// rather than ran: its policy or a hook (policy_violation), its approval
// mode, which leaves write_file, replace and run_shell_command out
// (tool_not_registered), a path outside the workspace.
var geminiRefusals = []string{"policy_violation", "tool_not_registered", "path_not_in_workspace"}

func newGeminiOutput(_ clientkit.Run, log io.Writer) clientkit.Output {
	g := &geminiOutput{log: log, tools: map[string]string{}}
	g.Lines = clientkit.NewLines(g.line)
	return g
}

// geminiEvent is the part of a stream-json event aipm reads.
type geminiEvent struct {
	Type     string `json:"type"`
	Role     string `json:"role"`
	Content  string `json:"content"`
	ToolName string `json:"tool_name"`
	ToolID   string `json:"tool_id"`
	Status   string `json:"status"`
	Error    *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func (g *geminiOutput) line(line []byte) {
	var ev geminiEvent
	if json.Unmarshal(bytes.TrimSpace(line), &ev) != nil || ev.Type == "" {
		g.log.Write(append(bytes.Clone(line), '\n'))
		return
	}
	switch ev.Type {
	case "message":
		if ev.Role == "assistant" {
			fmt.Fprint(g.log, ev.Content)
		}
	case "tool_use":
		g.tools[ev.ToolID] = ev.ToolName
		fmt.Fprintf(g.log, "\n[%s]\n", ev.ToolName)
	case "tool_result":
		if ev.Status == "error" && ev.Error != nil && slices.Contains(geminiRefusals, ev.Error.Type) {
			g.refusals = append(g.refusals, clientkit.Refusal{ID: ev.ToolID, Tool: g.tools[ev.ToolID], Said: ev.Error.Message})
		}
	case "result":
		fmt.Fprintln(g.log)
	}
}

// Refusals are the calls Gemini CLI refused, once it has exited.
func (g *geminiOutput) Refusals() []clientkit.Refusal {
	var out []clientkit.Refusal
	g.Done(func() { out = slices.Clone(g.refusals) })
	return out
}
