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
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/mcpserver"
)

// TestDocsCurrent: docs/tools.md is what aipm serve lists (the server
// instructions, then every tool's name, description, annotations and
// schemas, as tools/list serves them) with each tool's level from its spec.
// UPDATE_DOCS=1 rewrites it; otherwise a difference fails (the
// docs-are-current check CI runs).
func TestDocsCurrent(t *testing.T) {
	p := newProject(t)
	cs := connectInProcess(t, mcpserver.New(p.store, slog.New(slog.NewTextHandler(io.Discard, nil)), "test").MCP())
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := toolReference(cs.InitializeResult().Instructions, res.Tools)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "docs", "tools.md")
	if os.Getenv("UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(have, got) {
		t.Fatalf("docs/tools.md is stale: run UPDATE_DOCS=1 go test ./mcpserver -run TestDocsCurrent")
	}
}

// levelSays is what a tool's level means for its caller.
var levelSays = map[string]string{
	"none":          "no session needed",
	"authenticated": "any session",
	"taskOnly":      "a task session only",
	"chatOnly":      "a chat session only",
}

// docSchema is the part of a served JSON schema the reference shows.
type docSchema struct {
	Type        string                `json:"type"`
	Title       string                `json:"title"`
	Description string                `json:"description"`
	Enum        []any                 `json:"enum"`
	Items       *docSchema            `json:"items"`
	Properties  map[string]*docSchema `json:"properties"`
	Required    []string              `json:"required"`
	// order is the properties' order in the served JSON.
	order []string
}

// decodeSchema reads a served schema, keeping its properties' order.
func decodeSchema(v any) (*docSchema, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var s docSchema
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	var raw struct {
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	if len(raw.Properties) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw.Properties))
		dec.Token() // {
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return nil, err
			}
			s.order = append(s.order, key.(string))
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, err
			}
		}
	}
	return &s, nil
}

// typeOf names a schema's type for the reader: "array of string", an enum's
// values, an object's title.
func typeOf(s *docSchema) string {
	t := s.Type
	switch {
	case len(s.Enum) > 0:
		var vals []string
		for _, v := range s.Enum {
			vals = append(vals, fmt.Sprintf("`%v`", v))
		}
		t += ": " + strings.Join(vals, ", ")
	case s.Type == "array" && s.Items != nil:
		t = "array of " + typeOf(s.Items)
	case s.Type == "object" && s.Title != "":
		t = "object (" + s.Title + ")"
	}
	return t
}

// cell makes text fit in one markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// toolReference is docs/tools.md.
func toolReference(instructions string, tools []*mcp.Tool) ([]byte, error) {
	gate := mcpserver.ToolGate()
	var b bytes.Buffer
	b.WriteString("# MCP tool reference\n\n" +
		"<!-- Generated from what aipm serve lists by TestDocsCurrent (mcpserver/docs_test.go): do not edit.\n" +
		"     Regenerate: UPDATE_DOCS=1 go test ./mcpserver -run TestDocsCurrent -->\n\n" +
		"The tools `aipm serve` offers an agent, as its `tools/list` answer describes them, with the\n" +
		"session each one needs (its level). How they fit together: [concepts.md](concepts.md).\n\n" +
		"## Server instructions\n\nWhat every tool shares, said once to the model at `initialize`:\n\n")
	fmt.Fprintf(&b, "```\n%s\n```\n\n## Tools\n\n| tool | session | summary |\n| --- | --- | --- |\n", strings.TrimSpace(instructions))
	for _, t := range tools {
		summary, _, _ := strings.Cut(t.Description, ". ")
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s |\n", t.Name, t.Name, levelSays[gate[t.Name].Level], cell(strings.TrimSuffix(summary, ".")))
	}
	for _, t := range tools {
		if err := writeTool(&b, t, gate[t.Name].Level, gate[t.Name].PassesInterrupt); err != nil {
			return nil, fmt.Errorf("%s: %w", t.Name, err)
		}
	}
	return append(bytes.TrimRight(b.Bytes(), "\n"), '\n'), nil
}

// writeTool writes one tool's section.
func writeTool(b *bytes.Buffer, t *mcp.Tool, level string, passes bool) error {
	fmt.Fprintf(b, "\n### %s\n\n%s\n\n", t.Name, t.Description)
	fmt.Fprintf(b, "* Level: `%s` (%s).\n", level, levelSays[level])
	if passes {
		b.WriteString("* Runs even while an interrupt is unread, so that the agent can comply.\n")
	}
	if a := t.Annotations; a != nil {
		var hints []string
		if a.ReadOnlyHint {
			hints = append(hints, "read-only")
		}
		if a.IdempotentHint {
			hints = append(hints, "idempotent")
		}
		if len(hints) > 0 {
			fmt.Fprintf(b, "* Annotations: %s.\n", strings.Join(hints, ", "))
		}
	}
	in, err := decodeSchema(t.InputSchema)
	if err != nil {
		return err
	}
	b.WriteString("\nArguments:\n\n")
	if len(in.order) == 0 {
		b.WriteString("none.\n")
	} else {
		b.WriteString("| name | type | required | description |\n| --- | --- | --- | --- |\n")
		for _, name := range in.order {
			p := in.Properties[name]
			req := ""
			// The gate refuses a call without session_token before its
			// schema is checked, which therefore does not require it.
			if slices.Contains(in.Required, name) || name == "session_token" && level != "none" {
				req = "yes"
			}
			desc := p.Description
			if name == "ack" && desc == "" {
				// Undescribed in the schema (TestSize): the answer that
				// carries an ack says to pass it.
				desc = "the ack of the last answer that carried one: proves you read it (concepts.md, Chat)"
			}
			fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", name, cell(typeOf(p)), req, cell(desc))
		}
	}
	if t.OutputSchema == nil {
		return nil
	}
	out, err := decodeSchema(t.OutputSchema)
	if err != nil {
		return err
	}
	var fields []string
	for _, name := range out.order {
		fields = append(fields, fmt.Sprintf("`%s` (%s)", name, typeOf(out.Properties[name])))
	}
	fmt.Fprintf(b, "\nResult fields: %s.\n", strings.Join(fields, ", "))
	return nil
}
