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
	maxDefinitions   = 10_000 // the tool definitions Claude Code hands the model
	maxIdleAnswer    = 200    // an idle get_next_action answer's structured content
	maxInstructions  = 1_000  // the server instructions
	maxNullableTypes = 0      // type arrays holding "null", in every schema
)

// clientServerName is the name `aipm mcp-config` gives the server; clients
// prefix each tool's name with it (mcp__aipm__get_next_action).
const clientServerName = "aipm"

// sizeGolden is the snapshot of the figures TestSize prints.
var sizeGolden = filepath.Join("testdata", "size.golden")

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
// The tool definitions are measured in the shape each client hands them to
// the model, as compact JSON: Claude Code's {"name", "description",
// "input_schema"}, Codex's {"type": "function", "name", "description",
// "strict", "parameters"}, each name prefixed mcp__aipm__. Codex's envelope
// adds the same 31 bytes to every tool, which aipm does not choose; its
// most is maxDefinitions plus that envelope.
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
	var claude, codex, nullable int
	var perTool []string
	for _, tool := range tools {
		name := tool.Get("name").Str
		seen, desc, in := quote("mcp__"+clientServerName+"__"+name), quote(tool.Get("description").Str), tool.Get("inputSchema").Raw
		c := compactJSON(t, `{"name":`+seen+`,"description":`+desc+`,"input_schema":`+in+`}`)
		x := compactJSON(t, `{"type":"function","name":`+seen+`,"description":`+desc+`,"strict":false,"parameters":`+in+`}`)
		claude += len(c)
		codex += len(x)
		perTool = append(perTool, fmt.Sprintf("  %-30s %5d", name, len(c)))
		nullable += countNullableTypes(tool.Get("inputSchema")) + countNullableTypes(tool.Get("outputSchema"))
	}
	codexEnvelope := len(`"type":"function",`+`"strict":false,`) - len(`"input_schema"`) + len(`"parameters"`)
	idle := idleAnswerBytes(t, p)
	figures := []struct {
		name         string
		value, limit int
	}{
		{"tools/list answer", len(wire), maxToolsList},
		{"tool definitions, Claude Code", claude, maxDefinitions},
		{"tool definitions, Codex", codex, maxDefinitions + codexEnvelope*len(tools)},
		{"idle get_next_action answer", idle, maxIdleAnswer}, // a chat session's, or a task session's wait for its task
		{"server instructions", len(instructions), maxInstructions},
		{"nullable type arrays (count)", nullable, maxNullableTypes},
	}
	var b strings.Builder
	b.WriteString("# What aipm costs the model, in bytes (TestSize in size_test.go says how each is measured).\n")
	b.WriteString("# Rewrite (after the schemas): UPDATE_TOOLSNAPS=1 go test ./mcpserver -run TestSize\n")
	for _, f := range figures {
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
