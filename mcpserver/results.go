package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"aipm/fsstore"
)

// This file builds what a tools/call returns when the gate, not a tool,
// has the last word: the notification line added to a tool's result, and
// the results of calls that did not run.

// withNotification adds the notification line to a result a tool returned
// (DESIGN section 6). Claude Code and Codex show the model only the
// structured content of a successful result, so the line goes there as the
// top-level "notification" field (and into the JSON text block that mirrors
// it); it also goes in a text block of its own, for clients that show text
// and for error results, whose text the clients pass on.
func withNotification(res *mcp.CallToolResult, line string) {
	if raw, ok := res.StructuredContent.(json.RawMessage); ok {
		if with, ok := addField(raw, notificationField, line); ok {
			for i, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); ok && tc.Text == string(raw) {
					res.Content[i] = &mcp.TextContent{Text: string(with)}
				}
			}
			res.StructuredContent = with
		}
	}
	res.Content = append(res.Content, &mcp.TextContent{Text: line})
}

// addField returns the JSON object obj with key set to value as its first
// field; ok is false if obj is not an object.
func addField(obj json.RawMessage, key, value string) (json.RawMessage, bool) {
	body := bytes.TrimSpace(obj)
	if len(body) < 2 || body[0] != '{' {
		return nil, false
	}
	rest := bytes.TrimSpace(body[1:])
	k, _ := json.Marshal(key)
	v, _ := json.Marshal(value)
	out := make([]byte, 0, len(body)+len(k)+len(v)+3)
	out = append(out, '{')
	out = append(out, k...)
	out = append(out, ':')
	out = append(out, v...)
	if rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...), true
}

// refusal is the error result of a call that did not run.
func refusal(req *mcp.CallToolRequest, err error) *mcp.CallToolResult {
	var res mcp.CallToolResult
	res.SetError(err)
	return complete(req, &res)
}

// interruptNotice replaces the response of a tool that did not run (or a
// wait that took nothing) because the caller's session has an unread
// interrupt. The text leads with the interrupt, then what ses must do, and
// the ack the answer carries, to pass in that call (links.go).
func interruptNotice(req *mcp.CallToolRequest, ses fsstore.Session, n *fsstore.Notification, earlier []fsstore.Notification, ack string) *mcp.CallToolResult {
	text := fmt.Sprintf("INTERRUPT (%s did not run): %s %s", req.Params.Name, n.Message, fsstore.InterruptInstruction(ses.Purpose, n.Kind))
	if ack != "" {
		text += fmt.Sprintf(` Pass ack="%s" in that call.`, ack)
	}
	if len(earlier) > 0 {
		text += "\n\nUnread notifications before it (read with it):"
		for _, e := range earlier {
			text += "\n- " + noticeLine(e)
		}
	}
	return complete(req, &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: text}},
	})
}

// noticeLine is one notification shown whole in a line: who it is from,
// and its message.
func noticeLine(n fsstore.Notification) string {
	if n.From == "" {
		return n.Message
	}
	return n.From + ": " + n.Message
}

// interruptAction is the action word of an interrupt of kind: pause,
// cancel, or stop.
func interruptAction(kind string) string {
	if kind == "" {
		return "stop"
	}
	return kind
}

// resultTypeSince is the first protocol revision whose results must say
// "resultType" (the SDK's own rule for the results its tools return).
const resultTypeSince = "2026-07-28"

// complete makes a result built outside a tool handler valid in the
// session's protocol revision, as the SDK does for the results of handlers:
// content is never null and, from 2026-07-28, resultType is "complete".
// The SDK keeps resultType unexported; decoding it is the one way in.
func complete(req *mcp.CallToolRequest, res *mcp.CallToolResult) *mcp.CallToolResult {
	if res.Content == nil {
		res.Content = []mcp.Content{}
	}
	if protocolOf(req) < resultTypeSince {
		return res
	}
	raw, err := json.Marshal(res)
	if err != nil || len(raw) < 2 {
		return res
	}
	raw = append(raw[:len(raw)-1], `,"resultType":"complete"}`...)
	var out mcp.CallToolResult
	if err := json.Unmarshal(raw, &out); err != nil {
		return res
	}
	return &out
}

// protocolOf is the protocol revision of the caller's session; like the
// SDK, it assumes the newest when the session has not said.
func protocolOf(req *mcp.CallToolRequest) string {
	if req.Session != nil {
		if p := req.Session.InitializeParams(); p != nil && p.ProtocolVersion != "" {
			return p.ProtocolVersion
		}
	}
	return resultTypeSince
}

// schemaErrorPrefix starts the SDK's text for arguments that fail the
// tool's input schema.
const schemaErrorPrefix = `validating "arguments": `

// maxEchoedError bounds how much of an SDK error text reaches the model,
// so that a huge argument is never echoed back whole.
const maxEchoedError = 300

// explainSchemaError rewrites the SDK's schema-validation error so that,
// like every aipm error, it starts with a code and says what to do.
func explainSchemaError(res *mcp.CallToolResult, tool string) {
	if !res.IsError || len(res.Content) == 0 {
		return
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return
	}
	detail, ok := strings.CutPrefix(tc.Text, schemaErrorPrefix)
	if !ok {
		if strings.HasPrefix(tc.Text, "json: ") || strings.HasPrefix(tc.Text, "unmarshaling") {
			detail = tc.Text
		} else {
			return
		}
	}
	detail = nullInWords(tool, strings.TrimPrefix(detail, "validating root: "))
	res.Content[0] = &mcp.TextContent{Text: fmt.Sprintf(
		"invalid_arguments: the arguments of %s do not match its input schema (%s): fix them as the schema in tools/list says and call %s again",
		tool, fsstore.Clip(detail, maxEchoedError), tool)}
}

// nullArgument is the jsonschema text of an argument given as null where
// the schema wants a type: the SDK prints the null value as
// <invalid reflect.Value>.
var nullArgument = regexp.MustCompile(`^validating /properties/([^/:]+): type: <invalid reflect\.Value> has type "null", want "(\w+)"$`)

// nullInWords says a null argument as the one sentence a model can act on
// ("conversation_id: null is not allowed: give a string or leave it out",
// the last words only for an argument the tool's schema does not
// require); a null deeper in an argument is at least called null.
func nullInWords(tool, detail string) string {
	m := nullArgument.FindStringSubmatch(detail)
	if m == nil {
		return strings.ReplaceAll(detail, "<invalid reflect.Value>", "null")
	}
	article := "a"
	if strings.ContainsRune("aeiou", rune(m[2][0])) {
		article = "an"
	}
	text := fmt.Sprintf("%s: null is not allowed: give %s %s", m[1], article, m[2])
	schema, err := schemaFiles.ReadFile("schemas/" + tool + ".input.json")
	required := err == nil && slices.ContainsFunc(gjson.GetBytes(schema, "required").Array(), func(r gjson.Result) bool { return r.Str == m[1] })
	if !required {
		text += " or leave it out"
	}
	return text
}
