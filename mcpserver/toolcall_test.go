package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"aipm/fsstore"
	"aipm/mcpserver"
)

// TestToolCallsMatchTheSDK: for arguments that fail a tool's input schema,
// aipm's own call path (toolcall.go) answers exactly what the SDK's
// mcp.AddTool answers, tool by tool: the same invalid_arguments text. The
// arguments are made from each tool's schema: a required property left
// out, a property the schema does not have, and for each property values
// of every wrong kind (and a value outside an enum).
func TestToolCallsMatchTheSDK(t *testing.T) {
	p := newProject(t)
	for _, id := range []string{"coder2", "reviewer2"} {
		key, err := p.store.AddAgent(context.Background(), fsstore.NewAgent{ID: id, Type: fsstore.AgentAI, Parent: "lead"})
		if err != nil {
			t.Fatal(err)
		}
		p.passkeys[id] = key
	}
	var err error
	if p.cfg, err = p.store.LoadConfig(); err != nil {
		t.Fatal(err)
	}
	p.taskInProgress("reviewer", "ours")
	p.taskInProgress("reviewer2", "the SDK's")

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ours, theirs := mcpserver.New(p.store, log, "test"), mcpserver.New(p.store, log, "test")
	theirs.SDKTools()
	connect := func(s *mcpserver.Server, chatAgent, taskAgent string) side {
		cs := connectInProcess(t, s.MCP())
		return side{t: t, cs: cs, chat: p.authenticate(cs, chatAgent, fsstore.PurposeChat), task: p.authenticate(cs, taskAgent, fsstore.PurposeTask)}
	}
	a, b := connect(ours, "coder", "reviewer"), connect(theirs, "coder2", "reviewer2")

	listed, err := a.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := 0
	for _, tool := range listed.Tools {
		schema, _ := json.Marshal(tool.InputSchema)
		for _, c := range badArguments(string(schema)) {
			gotErr, got := a.callWith(tool.Name, schema, c)
			wantErr, want := b.callWith(tool.Name, schema, c)
			cases++
			if !wantErr || !strings.HasPrefix(want, "invalid_arguments: ") {
				t.Errorf("%s with %s: the SDK answered %q, not invalid_arguments: the case does not test the schema check", tool.Name, c.what, want)
				continue
			}
			if gotErr != wantErr || got != want {
				t.Errorf("%s with %s:\n got: %q\nwant: %q (the SDK's)", tool.Name, c.what, got, want)
			}
		}
	}
	cases += nonObjectArguments(t, a, b)
	t.Logf("%d cases", cases)
	if cases < 100 {
		t.Errorf("only %d cases: are the tools listed?", cases)
	}
}

// side is one of the two servers TestToolCallsMatchTheSDK compares, with
// a chat and a task session on it.
type side struct {
	t          *testing.T
	cs         *mcp.ClientSession
	chat, task string // session tokens
}

// callAs calls tool with c's arguments and token; it returns whether the
// result is an error, and its text.
func (s side) callAs(tool string, c argumentCase, token string) (bool, string) {
	args := maps.Clone(c.args)
	if token != "" {
		args["session_token"] = token
	}
	res, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		s.t.Fatalf("%s %s: %v", tool, c.what, err)
	}
	var text []string
	for _, content := range res.Content {
		if tc, ok := content.(*mcp.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	return res.IsError, strings.Join(text, "\n")
}

// callWith calls tool with c's arguments from the session its level
// admits, if it needs one.
func (s side) callWith(tool string, schema []byte, c argumentCase) (bool, string) {
	if !gjson.GetBytes(schema, "properties.session_token").Exists() {
		return s.callAs(tool, c, "")
	}
	isErr, text := s.callAs(tool, c, s.chat)
	if strings.HasPrefix(text, "wrong_session_purpose") {
		return s.callAs(tool, c, s.task)
	}
	return isErr, text
}

// nonObjectArguments: arguments that are not an object reach the tools
// that need no session (the gate finds no session_token in them for the
// others), and get the same answer from both sides. It returns the number
// of cases.
func nonObjectArguments(t *testing.T, a, b side) int {
	cases := 0
	for _, tool := range []string{"authenticate", "help"} {
		for _, args := range []any{[]any{"x"}, "x", 5, true} {
			var texts [2]string
			for i, s := range []side{a, b} {
				res, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
				if err != nil {
					t.Fatalf("%s with arguments %#v: %v", tool, args, err)
				}
				if !res.IsError {
					t.Errorf("%s with arguments %#v: not an error", tool, args)
				}
				texts[i] = res.Content[0].(*mcp.TextContent).Text
			}
			cases++
			if texts[0] != texts[1] {
				t.Errorf("%s with arguments %#v:\n got: %q\nwant: %q (the SDK's)", tool, args, texts[0], texts[1])
			}
		}
	}
	return cases
}

type argumentCase struct {
	what string
	args map[string]any
}

// badArguments makes, from a tool's input schema, argument sets that the
// schema refuses (the session token aside, which the test adds).
func badArguments(schema string) []argumentCase {
	props := gjson.Get(schema, "properties").Map()
	required := map[string]bool{}
	for _, r := range gjson.Get(schema, "required").Array() {
		required[r.Str] = true
	}
	base := map[string]any{}
	for name := range required {
		if name != "session_token" {
			base[name] = validValue(props[name])
		}
	}
	with := func(name string, v any) map[string]any {
		args := maps.Clone(base)
		args[name] = v
		return args
	}
	cases := []argumentCase{{"a property it does not have", with("no_such_property", "x")}}
	for _, name := range slices.Sorted(maps.Keys(required)) {
		if name == "session_token" {
			continue
		}
		args := maps.Clone(base)
		delete(args, name)
		cases = append(cases, argumentCase{"required " + name + " left out", args})
	}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		if name == "session_token" {
			continue
		}
		if strings.EqualFold(name, "content") || name == "agent_id" {
			// A key that differs only in case: a case-insensitive decoder
			// would take it.
			cases = append(cases, argumentCase{name + " in upper case", func() map[string]any {
				args := maps.Clone(base)
				delete(args, name)
				args[strings.ToUpper(name)] = "x"
				return args
			}()})
		}
		for _, v := range wrongValues(props[name]) {
			cases = append(cases, argumentCase{fmt.Sprintf("%s = %#v", name, v), with(name, v)})
		}
	}
	return cases
}

// validValue is a value the property p of a schema accepts.
func validValue(p gjson.Result) any {
	if e := p.Get("enum"); e.Exists() {
		return e.Array()[0].Str
	}
	types := p.Get("type")
	switch {
	case strings.Contains(types.Raw, "array"):
		return []any{"x"}
	case strings.Contains(types.Raw, "string"):
		return "x"
	case strings.Contains(types.Raw, "integer"):
		return 1
	case strings.Contains(types.Raw, "boolean"):
		return true
	}
	return nil
}

// wrongValues are values of every kind the property p of a schema refuses.
func wrongValues(p gjson.Result) []any {
	types := p.Get("type").Raw
	wrong := []any{[]any{"x"}, map[string]any{"x": 1}}
	if strings.Contains(types, "array") { // of strings: one that is not
		wrong = []any{[]any{7}, []any{"x", nil}, map[string]any{"x": 1}, "x"}
	}
	if !strings.Contains(types, "string") && !strings.Contains(types, "array") {
		wrong = append(wrong, "7")
	}
	if !strings.Contains(types, "integer") {
		wrong = append(wrong, 7)
	}
	if !strings.Contains(types, "boolean") {
		wrong = append(wrong, true)
	}
	if !strings.Contains(types, "null") {
		wrong = append(wrong, nil)
	}
	if strings.Contains(types, "integer") {
		wrong = append(wrong, 1.5, 1e30) // 1e30 is an integer to the schema, too big for an int
	}
	if p.Get("enum").Exists() {
		wrong = append(wrong, "not_a_value", "")
	}
	return wrong
}

// BenchmarkToolCall is one send_message round trip in process (in-memory
// transport, durability none: no fsync), through aipm's call path and
// through the SDK's mcp.AddTool, client and server CPU together.
//
//	go test -run '^$' -bench ToolCall -benchmem ./mcpserver
func BenchmarkToolCall(b *testing.B) {
	b.Setenv(mcpserver.EnvCheckSchemas, "0") // as aipm serve runs
	for _, path := range []string{"aipm", "sdk"} {
		b.Run("path="+path, func(b *testing.B) {
			p := newProject(b)
			setConfig(b, p, `durability = "fsync"`, `durability = "none"`)
			s := mcpserver.New(p.store, slog.New(slog.NewTextHandler(io.Discard, nil)), "test")
			if path == "sdk" {
				s.SDKTools()
			}
			ctx := context.Background()
			cs := connectInProcess(b, s.MCP())
			token := p.authenticate(cs, "coder", fsstore.PurposeChat)
			args := map[string]any{"session_token": token, "target_agent_id": "reviewer", "content": "hello"}
			for b.Loop() {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_message", Arguments: args})
				if err != nil || res.IsError {
					b.Fatalf("send_message: %v %+v", err, res)
				}
			}
		})
	}
}
