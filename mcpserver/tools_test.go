package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"aipm/mcpserver"
)

// TestToolSnapshots pins every tool's listing but its schemas (name,
// description, annotations) to testdata/toolsnaps/<name>.json, so that a
// change is a reviewed diff. The schemas are committed once, in schemas/,
// which TestServedSchemas pins. After a change, rewrite both and review:
//
//	UPDATE_TOOLSNAPS=1 go test ./mcpserver -run 'TestServedSchemas|TestToolSnapshots'
//	git diff mcpserver/schemas mcpserver/testdata/toolsnaps
func TestToolSnapshots(t *testing.T) {
	p := newProject(t)
	cs := connectInProcess(t, mcpserver.New(p.store, slog.New(slog.NewTextHandler(io.Discard, nil)), "test").MCP())
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("testdata", "toolsnaps")
	update := os.Getenv("UPDATE_TOOLSNAPS") == "1"
	seen := map[string]bool{}
	for _, tool := range res.Tools {
		if tool.Annotations == nil {
			t.Errorf("%s: annotations unset (ReadOnlyHint must be decided)", tool.Name)
		}
		raw, _ := json.Marshal(tool)
		var canon map[string]any
		json.Unmarshal(raw, &canon)
		delete(canon, "inputSchema") // in schemas/
		delete(canon, "outputSchema")
		got, _ := json.MarshalIndent(canon, "", "  ")
		got = append(got, '\n')
		path := filepath.Join(dir, tool.Name+".json")
		seen[tool.Name+".json"] = true
		if update {
			os.MkdirAll(dir, 0o755)
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: no snapshot (run UPDATE_TOOLSNAPS=1 go test ./mcpserver -run TestToolSnapshots and review the diff): %v", tool.Name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: listing differs from %s (run UPDATE_TOOLSNAPS=1 go test ./mcpserver -run TestToolSnapshots and review the diff):\n%s", tool.Name, path, got)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !seen[e.Name()] {
			t.Errorf("snapshot %s has no tool", e.Name())
		}
	}
}

// TestToolAnnotations: every tool states all four hints, none reaches
// outside the project or destroys anything (so Codex runs them unasked),
// the read-only ones are the ones below, and calling each of those leaves
// .ai-pm as it was.
func TestToolAnnotations(t *testing.T) {
	p := newProject(t)
	task := p.taskInProgress("coder", "annotations")
	cs := p.connect("")
	token := p.authenticate(cs, "coder", "task")
	readOnlyArgs := map[string]map[string]any{
		"help":       {"session_token": token},
		"get_task":   {"session_token": token, "task_id": task.ID},
		"list_tasks": {"session_token": token},

		"get_conversation_messages": {"session_token": token, "conversation_id": "cnv_01M80000000000000000000000"},
	}
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		raw, _ := json.Marshal(tool.Annotations)
		var hints map[string]any
		json.Unmarshal(raw, &hints)
		for _, h := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
			if _, ok := hints[h]; !ok {
				t.Errorf("%s: %s unset: %s", tool.Name, h, raw)
			}
		}
		if hints["destructiveHint"] != false || hints["openWorldHint"] != false {
			t.Errorf("%s: destructiveHint and openWorldHint must be false: %s", tool.Name, raw)
		}
		_, wantRO := readOnlyArgs[tool.Name]
		if got := hints["readOnlyHint"] == true; got != wantRO {
			t.Errorf("%s: readOnlyHint = %v, want %v", tool.Name, got, wantRO)
		}
		if wantRO && hints["idempotentHint"] != true {
			t.Errorf("%s: a read-only tool is idempotent", tool.Name)
		}
	}
	before := p.tree()
	for name, args := range readOnlyArgs {
		// No conversation exists here: its reader is refused, which must
		// change nothing either.
		if r := call(t, cs, name, args); r.isError && r.code() != "conversation_not_found" {
			t.Errorf("%s: %s", name, r.text)
		}
	}
	if p.tree() != before {
		t.Error("a tool annotated read-only changed .ai-pm")
	}
}

// TestOneNamingStyle: every property of every tool's input and output
// schema, at any depth, is snake_case.
func TestOneNamingStyle(t *testing.T) {
	p := newProject(t)
	cs := p.connect("")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	var walk func(tool, path string, schema any)
	walk = func(tool, path string, schema any) {
		m, _ := schema.(map[string]any)
		props, _ := m["properties"].(map[string]any)
		for name, sub := range props {
			if !snake.MatchString(name) {
				t.Errorf("%s: %s.%s is not snake_case", tool, path, name)
			}
			walk(tool, path+"."+name, sub)
		}
		if items, ok := m["items"]; ok {
			walk(tool, path+"[]", items)
		}
	}
	for _, tool := range res.Tools {
		for _, s := range []struct {
			name   string
			schema any
		}{{"input", tool.InputSchema}, {"output", tool.OutputSchema}} {
			raw, _ := json.Marshal(s.schema)
			var v any
			json.Unmarshal(raw, &v)
			walk(tool.Name, s.name, v)
		}
	}
}

// TestNotificationInEveryOutputSchema: every tool is registered through
// addTool, so its output schema names the notification line that the gate
// adds to the structured content (a client that validates structured
// content against the schema would otherwise reject the result).
func TestNotificationInEveryOutputSchema(t *testing.T) {
	p := newProject(t)
	cs := p.connect("")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		raw, _ := json.Marshal(tool.OutputSchema)
		var schema struct {
			Properties map[string]any `json:"properties"`
		}
		json.Unmarshal(raw, &schema)
		if _, ok := schema.Properties["notification"]; !ok {
			t.Errorf("%s: output schema has no notification property (register it with addTool): %s", tool.Name, raw)
		}
	}
}
