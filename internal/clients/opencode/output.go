package opencode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"aipm/internal/clients/clientkit"
)

// openCodeOutput reads opencode run --format json: one JSON event a line
// (step_start, text, tool_use, step_finish, error). The text goes to the
// log as it comes. A refused call is, as measured with 1.18.33, a
// tool_use whose state is "error" with the words of a permission rule
// (openCodeRefusals), or its "invalid" tool standing for a call of a tool
// the permission rules left out ("Model tried to call unavailable tool
// 'write'"; a tool that does not exist at all is the model's mistake). A call aipm's plugin denied has aipm's words, and is not
// one.
type openCodeOutput struct {
	*clientkit.Lines
	log      io.Writer
	off      map[string]bool // the tools the access level's permission rules leave out
	refusals []clientkit.Refusal
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

func newOpenCodeOutput(r clientkit.Run, log io.Writer) clientkit.Output {
	off := map[string]bool{}
	for permission, tools := range openCodePermissionTools {
		if openCodePermission[r.Access][permission] == "deny" {
			for _, t := range tools {
				off[t] = true
			}
		}
	}
	o := &openCodeOutput{log: log, off: off}
	o.Lines = clientkit.NewLines(o.line)
	return o
}

// openCodePermissionTools are the tools each of OpenCode's permissions
// governs, as 1.18.33 leaves them out of the model's tools when denied.
var openCodePermissionTools = map[string][]string{
	"edit": {"edit", "write", "apply_patch", "patch", "multiedit"},
	"bash": {"bash"},
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
		o.log.Write(append(bytes.Clone(line), '\n'))
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
			o.refusals = append(o.refusals, clientkit.Refusal{ID: part.CallID, Tool: part.Tool})
		case part.Tool == "invalid" && strings.HasPrefix(part.State.Input.Error, openCodeUnavailable) && o.off[part.State.Input.Tool]:
			o.refusals = append(o.refusals, clientkit.Refusal{ID: part.CallID, Tool: part.State.Input.Tool,
				Said: "not offered at this access"})
		case part.State.Status == "error":
			fmt.Fprintln(o.log, part.State.Error)
		}
	case "error":
		fmt.Fprintf(o.log, "OpenCode: %s\n", ev.Error)
	}
}

// Refusals are the calls OpenCode refused, once it has exited.
func (o *openCodeOutput) Refusals() []clientkit.Refusal {
	var out []clientkit.Refusal
	o.Done(func() { out = slices.Clone(o.refusals) })
	return out
}
