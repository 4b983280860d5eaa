package mcpserver_test

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"aipm/mcpserver"
)

// TestSchemaLint: every input and output schema aipm lists, at every
// protocol revision the real clients speak, passes a strict lint with no
// finding: the MCP Inspector's --strict warnings (a type given as an
// array, ["null", "array"] above all), and what the clients' own parsers
// refuse or drop (Claude Code refuses a bare true as a property's schema,
// Codex reads type as one string and needs items on an array). See
// lintSchema for the rules. A schema that needs a keyword the lint does not
// know fails it: teach the lint that keyword's rules first.
func TestSchemaLint(t *testing.T) {
	p := newProject(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, rev := range revisions {
		wire := listToolsWire(t, mcpserver.New(p.store, log, "test").MCP(), rev)
		tools := gjson.Get(wire, "result.tools").Array()
		if len(tools) == 0 {
			t.Fatalf("%s: no tools listed", rev)
		}
		outputs := map[string]gjson.Result{}
		for _, tool := range tools {
			outputs[tool.Get("name").Str] = tool.Get("outputSchema")
		}
		findings := 0
		for _, tool := range tools {
			name := tool.Get("name").Str
			for _, s := range []struct {
				kind  string
				input bool
			}{{"inputSchema", true}, {"outputSchema", false}} {
				for _, f := range lintSchema(s.kind, tool.Get(s.kind), s.input, outputs) {
					t.Errorf("%s: %s: %s", rev, name, f)
					findings++
				}
			}
		}
		t.Logf("%s: %d tools, %d findings", rev, len(tools), findings)
	}
}

// TestSchemaLintFinds: the lint flags what it is meant to.
func TestSchemaLintFinds(t *testing.T) {
	outputs := map[string]gjson.Result{"get_task": gjson.Parse(`{"type":"object","properties":{"task":{"type":"object","properties":{},"additionalProperties":false}},"additionalProperties":false}`)}
	for _, tc := range []struct {
		schema string
		input  bool
		want   string
	}{
		{`{"type":"object","properties":{"a":{"type":["null","array"],"items":{"type":"string"}}},"additionalProperties":false}`, true, "type is not one string"},
		{`{"type":"object","properties":{"a":{"type":["string","integer"]}},"additionalProperties":false}`, true, "type is not one string"},
		{`{"type":"object","properties":{"a":{"description":"no type"}},"additionalProperties":false}`, true, "no type"},
		{`{"type":"object","properties":{"a":true},"additionalProperties":false}`, true, "not an object"},
		{`{"type":"object","properties":{"a":{"type":"array"}},"additionalProperties":false}`, true, "array without items"},
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, true, "additionalProperties is not false"},
		{`{"type":"object","additionalProperties":false}`, true, "no properties"},
		{`{"type":"string"}`, true, "root is not an object"},
		{`{"type":"object","properties":{},"required":["a"],"additionalProperties":false}`, true, "required names no property"},
		{`{"type":"object","properties":{"a":{"type":"string","enum":[1]}},"additionalProperties":false}`, true, "enum value"},
		{`{"type":"object","properties":{"a":{"type":"string","format":"uri"}},"additionalProperties":false}`, true, "keyword format"},
		{`{"type":"object","properties":{"a":{"type":"string","description":""}},"additionalProperties":false}`, true, "empty description"},
		{`{"type":"object","properties":{"t":{"type":"object"}},"additionalProperties":false}`, false, "an object without properties needs a title"},
		{`{"type":"object","properties":{"t":{"type":"object","title":"task: fields as in get_nothing"}},"additionalProperties":false}`, false, "names no tool"},
		{`{"type":"object","properties":{"t":{"type":"object"}},"additionalProperties":false}`, true, "no properties"},
	} {
		findings := lintSchema("schema", gjson.Parse(tc.schema), tc.input, outputs)
		if !slices.ContainsFunc(findings, func(f string) bool { return strings.Contains(f, tc.want) }) {
			t.Errorf("%s: findings %q, want one saying %q", tc.schema, findings, tc.want)
		}
	}
	clean := `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","enum":["x"]},"description":"d"},"t":{"type":"object","title":"task: fields as in get_task"}},"required":["a"],"additionalProperties":false}`
	if f := lintSchema("schema", gjson.Parse(clean), false, outputs); len(f) > 0 {
		t.Errorf("a clean schema has findings: %q", f)
	}
}

// lintSchema returns what a strict lint finds in schema, an input or an
// output schema; outputs are the output schemas of every tool listed, by
// name. The rules:
//
//   - the root is an object schema;
//   - every schema in it (the root, properties, items) is a JSON object,
//     never a bare true or false, and gives type as one string, never an
//     array (no ["null", T]: aipm sends no nulls);
//   - an array says its items;
//   - an object with properties closes them (additionalProperties false,
//     as inference makes every Go struct), and lists in required only
//     properties it has; every object of an input schema has properties
//     (Codex requires them) even if empty;
//   - an output schema's object without properties is a record spelled out
//     in another tool's output schema (see sharedViews in tools.go): its
//     title names that tool, which is listed;
//   - enum values are of the schema's type, and descriptions and titles
//     are not empty;
//   - no other keyword appears.
func lintSchema(where string, schema gjson.Result, input bool, outputs map[string]gjson.Result) []string {
	l := &schemaLint{input: input, outputs: outputs}
	if !schema.IsObject() || schema.Get("type").Str != "object" {
		l.add(where, "root is not an object schema: %.100s", schema.Raw)
	}
	l.walk(where, schema)
	return l.findings
}

// schemaLint is one run of lintSchema: what it was told, and what it found.
type schemaLint struct {
	input    bool
	outputs  map[string]gjson.Result
	findings []string
}

// knownKeywords are the keywords whose rules the lint knows.
var knownKeywords = []string{"type", "properties", "required", "additionalProperties", "items", "enum", "description", "title"}

func (l *schemaLint) add(path, format string, args ...any) {
	l.findings = append(l.findings, path+": "+fmt.Sprintf(format, args...))
}

// walk checks the schema s at path and every schema under it.
func (l *schemaLint) walk(path string, s gjson.Result) {
	if !s.IsObject() {
		l.add(path, "not an object schema but %s", s.Raw)
		return
	}
	s.ForEach(func(k, _ gjson.Result) bool {
		if !slices.Contains(knownKeywords, k.Str) {
			l.add(path, "keyword %s is not one the lint knows the rules of", k.Str)
		}
		return true
	})
	types := l.checkType(path, s)
	l.checkWords(path, s)
	if slices.Contains(types, "array") {
		if !s.Get("items").Exists() {
			l.add(path, "array without items")
		} else {
			l.walk(path+"[]", s.Get("items"))
		}
	} else if s.Get("items").Exists() {
		l.add(path, "items on a schema of type %s", s.Get("type").Raw)
	}
	if !slices.Contains(types, "object") {
		for _, k := range []string{"properties", "required", "additionalProperties"} {
			if s.Get(k).Exists() {
				l.add(path, "%s on a schema of type %s", k, s.Get("type").Raw)
			}
		}
		return
	}
	l.checkObject(path, s)
	if props := s.Get("properties"); props.IsObject() {
		props.ForEach(func(name, p gjson.Result) bool {
			l.walk(path+"."+name.Str, p)
			return true
		})
	}
}

// checkType checks s's type and returns the types it admits, to walk it by.
func (l *schemaLint) checkType(path string, s gjson.Result) []string {
	ty := s.Get("type")
	switch {
	case !ty.Exists():
		l.add(path, "no type")
	case ty.IsArray():
		l.add(path, "type is not one string: %s", ty.Raw)
		var types []string
		for _, t := range ty.Array() {
			types = append(types, t.Str)
		}
		return types
	case ty.Type != gjson.String:
		l.add(path, "type is not one string: %s", ty.Raw)
	case !slices.Contains([]string{"object", "array", "string", "integer", "number", "boolean"}, ty.Str):
		l.add(path, "type %q", ty.Str)
	}
	return []string{ty.Str}
}

// checkWords checks s's description, title and enum.
func (l *schemaLint) checkWords(path string, s gjson.Result) {
	for _, k := range []string{"description", "title"} {
		if v := s.Get(k); v.Exists() && (v.Type != gjson.String || strings.TrimSpace(v.Str) == "") {
			l.add(path, "empty %s", k)
		}
	}
	enum := s.Get("enum")
	if !enum.Exists() {
		return
	}
	if !enum.IsArray() || len(enum.Array()) == 0 {
		l.add(path, "enum is not a list of values")
	}
	ty := s.Get("type")
	for _, v := range enum.Array() {
		if ty.Str != "string" || v.Type != gjson.String {
			l.add(path, "enum value %s is not of type %s", v.Raw, ty.Raw)
		}
	}
}

// checkObject checks an object schema's properties, closure and required.
func (l *schemaLint) checkObject(path string, s gjson.Result) {
	props := s.Get("properties")
	switch {
	case props.Exists() && !props.IsObject():
		l.add(path, "properties is not an object")
	case props.Exists():
		if ap := s.Get("additionalProperties"); ap.Type != gjson.False {
			l.add(path, "additionalProperties is not false: %s", ap.Raw)
		}
	case l.input:
		l.add(path, "an input object with no properties")
	default:
		title := s.Get("title").Str
		_, home, _ := strings.Cut(title, "fields as in ")
		if title == "" {
			l.add(path, "an object without properties needs a title naming the tool whose output schema spells it out")
		} else if _, ok := l.outputs[home]; !ok {
			l.add(path, "title %q names no tool", title)
		}
	}
	req := s.Get("required")
	if req.Exists() && !req.IsArray() {
		l.add(path, "required is not a list")
	}
	for _, r := range req.Array() {
		if !props.Get(gjson.Escape(r.Str)).Exists() {
			l.add(path, "required names no property: %s", r.Raw)
		}
	}
}

// TestResultsNeverNull: no result holds null, at any depth, so that the
// output schemas can say "array" and "object" where inference said
// ["null", ...] (see tidy): an empty list is [], a missing record is left
// out. These are the calls whose lists are empty or whose record is
// missing in a new project; every other call of every test is checked too,
// since the tests run servers that validate each result against its full
// output schema (EnvCheckSchemas), which allows no null.
func TestResultsNeverNull(t *testing.T) {
	p := newProject(t)
	p.taskInProgress("coder", "never null")
	cs := p.connect("")
	task := p.authenticate(cs, "coder", "task")
	chat := p.authenticate(cs, "reviewer", "chat")
	for _, c := range []struct {
		tool  string
		args  map[string]any
		lists []string // top-level fields that must be lists
	}{
		{"get_task", map[string]any{"session_token": chat}, []string{"assigned"}},
		{"get_pending_messages", map[string]any{"session_token": chat}, []string{"pending_messages", "context", "pending_delegations"}},
		{"get_notifications", map[string]any{"session_token": chat}, []string{"notifications"}},
		{"list_tasks", map[string]any{"session_token": chat, "status": "done"}, []string{"tasks"}},
		{"help", map[string]any{"session_token": chat}, []string{"tools"}},
		{"get_task", map[string]any{"session_token": task}, []string{"task_ids", "delegations", "conversations"}},
		{"request_task", map[string]any{"session_token": task, "title": "a subtask"}, []string{"asked_to_approve"}},
	} {
		r := call(t, cs, c.tool, c.args)
		if r.isError {
			t.Errorf("%s: %s", c.tool, r.text)
			continue
		}
		if path := nullAt("", r.data); path != "" {
			t.Errorf("%s: null at %s: %s", c.tool, path, r.text)
		}
		for _, f := range c.lists {
			if _, ok := r.data[f].([]any); !ok {
				t.Errorf("%s: %s is %#v, want a list", c.tool, f, r.data[f])
			}
		}
	}
	if r := call(t, cs, "get_task", map[string]any{"session_token": chat}); r.data != nil {
		if _, ok := r.data["task"]; ok {
			t.Errorf("get_task without a task: task is present: %s", r.text)
		}
	}
}

// nullAt is the path of the first null in the decoded JSON value v, or "".
func nullAt(path string, v any) string {
	switch v := v.(type) {
	case nil:
		if path == "" {
			return "(root)"
		}
		return path
	case map[string]any:
		for k, sub := range v {
			if p := nullAt(path+"."+k, sub); p != "" {
				return p
			}
		}
	case []any:
		for i, sub := range v {
			if p := nullAt(fmt.Sprintf("%s[%d]", path, i), sub); p != "" {
				return p
			}
		}
	}
	return ""
}
