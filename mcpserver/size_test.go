package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"aipm/fsstore"
	"aipm/internal/clientconfig"
	"aipm/internal/clients"
	"aipm/mcpserver"
)

// What aipm costs the model that uses it, in bytes, and the most each
// figure may be. A client hands the model every tool's name, description
// and input schema on every request, and the model reads every answer:
// an idle chat session reads one get_next_action answer per wait (25 s by
// default), all hour long. Output schemas go to the client only.
const (
	// DESIGN section 13, P11, whatever the tool count: a new tool pays for
	// itself inside these numbers.
	maxToolsList     = 30_000 // the tools/list answer, as the server writes it
	maxDefinitions   = 10_000 // aipm's own bytes of the tool definitions each client hands its model
	maxIdleAnswer    = 200    // an idle get_next_action answer's structured content
	maxInstructions  = 1_000  // the server instructions
	maxNullableTypes = 0      // type arrays holding "null", in every schema
)

// clientServerName is the name `aipm mcp-config` gives the server; clients
// name aipm's tools with it (mcp__aipm__get_next_action).
const clientServerName = clientconfig.ServerName

// sizeGolden is the snapshot of the figures TestSize prints.
var sizeGolden = filepath.Join("testdata", "size.golden")

// figure is one line of TestSize's snapshot: a measure and its most, or,
// with a note, a measure shown beside the one above it, counted against
// nothing, the note saying what it is.
type figure struct {
	name         string
	value, limit int
	note         string
}

// TestSize prints what aipm costs the model (go test -run Size -v
// ./mcpserver) and holds it: it fails when a figure is past its most, or
// differs from testdata/size.golden. Every figure is measured through the
// SDK's client; tools/list and the idle answer at each protocol revision
// the real clients speak, the largest counting. After a change that moves a
// figure, rewrite the snapshot and review the diff; TestSize measures the
// served schemas, so rewrite it after them, in a second run:
//
//	UPDATE_TOOLSNAPS=1 go test ./mcpserver -run 'TestServedSchemas|TestToolSnapshots'
//	UPDATE_TOOLSNAPS=1 go test ./mcpserver -run TestSize
//	git diff mcpserver/testdata/size.golden
//
// The tool definitions are measured as each client hands them to its
// model, as compact JSON (clientShapes). aipm's own bytes, held to
// maxDefinitions in every client, are each tool's name as the client names
// it, its description and its input schema, as
// {"name","description","input_schema"}: Claude Code's shape, whole. What
// a client adds to every tool (its envelope, its keys, its own arguments)
// is shown apart and counted against nothing, since aipm does not choose
// it: Codex's {"type":"function",…,"strict":false,"defer_loading":true,
// "parameters"} around bare names, all in one namespace; Gemini CLI's
// {"name","description","parametersJsonSchema"} whose schema gains its
// wait_for_previous argument; OpenCode's Chat Completions
// {"type":"function","function":{…,"parameters"}}. Codex's namespace is
// named mcp__aipm and described by the server instructions: that name and
// description are shown on their own line and counted against nothing
// here, the instructions being held by maxInstructions, as in every other
// client, which hands them to its model outside its tools.
func TestSize(t *testing.T) {
	p := newProject(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var wire string // the largest tools/list answer
	for _, rev := range revisions {
		line := listToolsWire(t, mcpserver.New(p.store, log, "test").MCP(), rev)
		t.Logf("tools/list at %s: %d bytes", rev, len(line))
		if len(line) > len(wire) {
			wire = line
		}
	}
	instructions := connectInProcess(t, mcpserver.New(p.store, log, "test").MCP()).InitializeResult().Instructions
	tools := gjson.Get(wire, "result.tools").Array()
	if len(tools) == 0 {
		t.Fatalf("no tools listed: %.200s", wire)
	}
	figures := []figure{{"tools/list answer", len(wire), maxToolsList, ""}}
	for _, shape := range clientShapes {
		figures = append(figures, shape.measure(t, tools, instructions)...)
	}
	nullable := 0
	var perTool []string
	for _, tool := range tools {
		perTool = append(perTool, fmt.Sprintf("  %-30s %5d", tool.Get("name").Str, ownBytes(t, clientToolName(t, "claude", tool), tool)))
		nullable += countNullableTypes(tool.Get("inputSchema")) + countNullableTypes(tool.Get("outputSchema"))
	}
	figures = append(figures,
		figure{"idle get_next_action answer", idleAnswerBytes(t, p), maxIdleAnswer, ""}, // a chat session's, or a task session's wait for its task
		figure{"server instructions", len(instructions), maxInstructions, ""},
		figure{"nullable type arrays (count)", nullable, maxNullableTypes, ""},
	)
	var b strings.Builder
	b.WriteString("# What aipm costs the model, in bytes (TestSize in size_test.go says how each is measured).\n")
	b.WriteString("# Rewrite (after the schemas): UPDATE_TOOLSNAPS=1 go test ./mcpserver -run TestSize\n")
	for _, f := range figures {
		if f.note != "" {
			fmt.Fprintf(&b, "  %-30s %6d  (%s)\n", f.name+":", f.value, f.note)
			continue
		}
		fmt.Fprintf(&b, "%-32s %6d  (at most %d)\n", f.name+":", f.value, f.limit)
		if f.value > f.limit {
			t.Errorf("%s: %d, more than %d", f.name, f.value, f.limit)
		}
	}
	fmt.Fprintf(&b, "tool definitions, Claude Code, by tool:\n%s\n", strings.Join(perTool, "\n"))
	got := b.String()
	t.Log("\n" + got)
	if os.Getenv("UPDATE_TOOLSNAPS") == "1" {
		if err := os.WriteFile(sizeGolden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(sizeGolden)
	if err != nil || string(want) != got {
		t.Errorf("%s is stale (rewrite it with UPDATE_TOOLSNAPS=1 go test ./mcpserver -run TestSize and review the diff): %v\nwant:\n%s", sizeGolden, err, want)
	}
}

// clientShape is how one client hands aipm's tools to its model, as the
// real client, run against a scripted model, was seen to send them
// (TestToolDefinitionsAsSent in internal/launch measures the same there).
type clientShape struct {
	client string // its name in internal/clients, whose ToolName names aipm's tools as it does
	// sent is one tool's definition as the client sends it, from the name
	// it gives the tool, the description and the input schema, each JSON.
	sent func(name, desc, schema string) string
	adds string // what sent adds to aipm's own bytes, for the snapshot
	// namespace, when not "", is the one namespace the client sends all
	// of aipm's tools in, in the Responses API's shape; its description
	// is the server instructions.
	namespace string
}

// geminiWaitForPrevious is the property Gemini CLI adds to every tool's
// schema (0.61.0), aipm's included.
const geminiWaitForPrevious = `{"type":"boolean","description":"Set to true to wait for all previously requested tools in this turn to complete before starting. Set to false (or omit) to run in parallel. Use true when this tool depends on the output of previous tools."}`

// clientShapes are the clients TestSize measures aipm's tool definitions
// in, each as it sends them.
var clientShapes = []clientShape{
	{client: "claude", sent: func(n, d, s string) string {
		return `{"name":` + n + `,"description":` + d + `,"input_schema":` + s + `}`
	}},
	{client: "codex", sent: func(n, d, s string) string {
		return `{"type":"function","name":` + n + `,"description":` + d + `,"strict":false,"defer_loading":true,"parameters":` + s + `}`
	}, adds: "each tool's type, strict and defer_loading; the namespace's type and list", namespace: "mcp__" + clientServerName},
	{client: "gemini", sent: func(n, d, s string) string {
		return `{"name":` + n + `,"description":` + d + `,"parametersJsonSchema":` + withProperty(s, "wait_for_previous", geminiWaitForPrevious) + `}`
	}, adds: "wait_for_previous in every tool's schema; parametersJsonSchema for input_schema"},
	{client: "opencode", sent: func(n, d, s string) string {
		return `{"type":"function","function":{"name":` + n + `,"description":` + d + `,"parameters":` + s + `}}`
	}, adds: `each tool's {"type":"function","function":…}`},
}

// measure is the shape's figures: aipm's own bytes, held to
// maxDefinitions, and, shown apart, what the client adds and its
// namespace's name and description.
func (c clientShape) measure(t *testing.T, tools []gjson.Result, instructions string) []figure {
	t.Helper()
	own := 0
	var sent []string
	for _, tool := range tools {
		name := clientToolName(t, c.client, tool)
		own += ownBytes(t, name, tool)
		sent = append(sent, string(compactJSON(t, c.sent(quote(name), quote(tool.Get("description").Str), tool.Get("inputSchema").Raw))))
	}
	all := len(strings.Join(sent, ""))
	namespace := 0 // its name and description: {"name","description","tools":}
	if c.namespace != "" {
		def := `{"type":"namespace","name":` + quote(c.namespace) + `,"description":` + quote(instructions) + `,"tools":[` + strings.Join(sent, ",") + `]}`
		all = len(compactJSON(t, def))
		namespace = len(compactJSON(t, `{"name":`+quote(c.namespace)+`,"description":`+quote(instructions)+`,"tools":[]}`)) - len(`[]`)
	}
	client, _ := clients.Get(c.client)
	figures := []figure{{"tool definitions, " + client.Title, own, maxDefinitions, ""}}
	if added := all - own - namespace; added != 0 {
		figures = append(figures, figure{client.Title + " adds", added, 0, "not counted: " + c.adds})
	}
	if namespace != 0 {
		figures = append(figures, figure{client.Title + "'s namespace", namespace, 0, "not counted: its name, and as its description the server instructions, held below"})
	}
	return figures
}

// clientToolName is the name client gives aipm's tool (as tools/list
// lists it) to its model.
func clientToolName(t *testing.T, client string, tool gjson.Result) string {
	t.Helper()
	c, ok := clients.Get(client)
	if !ok {
		t.Fatalf("no client %q", client)
	}
	return c.ToolName(tool.Get("name").Str)
}

// ownBytes is aipm's own part of a tool's definition, the tool named
// name: {"name","description","input_schema"}, compact.
func ownBytes(t *testing.T, name string, tool gjson.Result) int {
	t.Helper()
	return len(compactJSON(t, `{"name":`+quote(name)+`,"description":`+quote(tool.Get("description").Str)+`,"input_schema":`+tool.Get("inputSchema").Raw+`}`))
}

// withProperty is the object schema with one more property, name, last.
func withProperty(schema, name, property string) string {
	props := gjson.Get(schema, "properties")
	if !props.IsObject() {
		return schema[:len(schema)-1] + `,"properties":{` + quote(name) + `:` + property + `}}`
	}
	body := strings.TrimSpace(props.Raw[:len(props.Raw)-1])
	if body != "{" {
		body += ","
	}
	return schema[:props.Index] + body + quote(name) + `:` + property + `}` + schema[props.Index+len(props.Raw):]
}

// quote is s as a JSON string, written as JavaScript and Rust clients
// write it (no HTML escaping).
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

func compactJSON(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("compact %.100s: %v", s, err)
	}
	return b.Bytes()
}

// countNullableTypes counts the type arrays holding "null" in a schema, at
// any depth.
func countNullableTypes(schema gjson.Result) int {
	n := 0
	var walk func(v gjson.Result)
	walk = func(v gjson.Result) {
		if v.IsObject() {
			if ty := v.Get("type"); ty.IsArray() {
				for _, e := range ty.Array() {
					if e.Str == "null" {
						n++
					}
				}
			}
		}
		if v.IsObject() || v.IsArray() {
			v.ForEach(func(_, sub gjson.Result) bool {
				walk(sub)
				return true
			})
		}
	}
	walk(schema)
	return n
}

// idleAnswerBytes is the size of the structured content of the answer an
// idle chat session gets from get_next_action: what its model reads every
// wait. Measured over aipm serve at every protocol revision; the figure is
// the largest.
func idleAnswerBytes(t *testing.T, p *project) int {
	t.Helper()
	most := 0
	for _, rev := range revisions {
		cs := p.connect(rev)
		token := p.authenticate(cs, "reviewer", "chat")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_next_action", Arguments: map[string]any{"session_token": token, "wait_seconds": 1}})
		cancel()
		if err != nil || res.IsError {
			t.Fatalf("get_next_action at %s: %v %+v", rev, err, res)
		}
		raw := structuredJSON(t, res)
		if got := gjson.GetBytes(raw, "action").Str; got != "wait_for_messages" {
			t.Fatalf("get_next_action at %s: %s, want an idle wait", rev, raw)
		}
		t.Logf("idle answer at %s: %s", rev, raw)
		most = max(most, len(raw))
		call(t, cs, "logout", map[string]any{"session_token": token})
		most = max(most, taskWaitBytes(t, p, cs, rev))
	}
	return most
}

// taskWaitBytes is the size of a task session's wait for its task: the task
// was blocked by its own agent (no interrupt), so get_next_action waits for
// it to move back to in_progress, answered again and again.
func taskWaitBytes(t *testing.T, p *project, cs *mcp.ClientSession, rev string) int {
	t.Helper()
	task := p.taskInProgress("coder", "a task that waits")
	token := p.authenticate(cs, "coder", "task")
	if _, err := p.store.UpdateTask(context.Background(), p.cfg, task.ID, "coder", fsstore.TaskChange{Status: fsstore.StatusBlocked, Reason: "waiting"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_next_action", Arguments: map[string]any{"session_token": token, "wait_seconds": 1}})
	if err != nil || res.IsError {
		t.Fatalf("task session's get_next_action at %s: %v %+v", rev, err, res)
	}
	raw := structuredJSON(t, res)
	if got := gjson.GetBytes(raw, "action").Str; got != "wait_for_task" {
		t.Fatalf("task session's get_next_action at %s: %s, want a wait", rev, raw)
	}
	t.Logf("task wait answer at %s: %s", rev, raw)
	call(t, cs, "logout", map[string]any{"session_token": token})
	return len(raw)
}

// structuredJSON is a result's structured content exactly as the server
// wrote it: the text block that mirrors it (the SDK's client decodes the
// structured content into a map, whose key order is lost).
func structuredJSON(t *testing.T, res *mcp.CallToolResult) []byte {
	t.Helper()
	want, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Content {
		tc, ok := c.(*mcp.TextContent)
		if !ok {
			continue
		}
		var a, b any
		if json.Unmarshal([]byte(tc.Text), &a) == nil && json.Unmarshal(want, &b) == nil && reflect.DeepEqual(a, b) {
			return []byte(tc.Text)
		}
	}
	t.Fatalf("no text block mirrors the structured content %s", want)
	return nil
}
