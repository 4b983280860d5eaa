package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSDKResolvesSchemasOnFirstCall fails if the go-sdk in use resolves a
// tool's schemas when the tool is added (third_party/go-sdk/README.md):
// v1.8.0 as released resolves every schema of every tool in AddTool, which
// cost aipm serve most of its start-up; the patched copy resolves a tool's
// schemas on its first call. A schema that cannot be resolved (here a
// default of the wrong type) shows it: released, AddTool panics; patched,
// the call fails and the server goes on.
func TestSDKResolvesSchemasOnFirstCall(t *testing.T) {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "lazy"}, nil)
	type in struct {
		N int `json:"n"`
	}
	type out struct {
		N int `json:"n"`
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("AddTool resolved the schema at once (%v): is the go-sdk lazy-resolve change (third_party/go-sdk) lost?", r)
			}
		}()
		mcp.AddTool(server, &mcp.Tool{
			Name:        "bad",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","default":"x"}}}`),
		}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, out, error) {
			return nil, out(a), nil
		})
	}()
	mcp.AddTool(server, &mcp.Tool{Name: "good"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, out, error) {
		return nil, out(a), nil
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "lazy"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "bad", Arguments: map[string]any{"n": 1}}); err == nil || !strings.Contains(err.Error(), "input schema") {
		t.Errorf("calling the tool whose schema cannot be resolved: err = %v, want an input schema error", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "good", Arguments: map[string]any{"n": 2}})
	if err != nil || res.IsError {
		t.Fatalf("good: %v %+v", err, res)
	}
	// The validation itself is as before: a wrong type is refused.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "good", Arguments: map[string]any{"n": "two"}})
	if err != nil || !res.IsError {
		t.Fatalf("good with n a string: %v %+v, want a tool error", err, res)
	}
}

// TestEveryToolSchemaResolves: the SDK resolves a tool's schemas only when
// the tool is first called, so this test does what AddTool did at start:
// every input and output schema aipm serves resolves, defaults checked.
func TestEveryToolSchemaResolves(t *testing.T) {
	p := newProject(t)
	cs := p.connect("")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) == 0 {
		t.Fatal("no tools listed")
	}
	for _, tool := range res.Tools {
		for _, s := range []struct {
			name   string
			schema any
		}{{"input", tool.InputSchema}, {"output", tool.OutputSchema}} {
			raw, err := json.Marshal(s.schema)
			if err != nil {
				t.Fatalf("%s: %s schema: %v", tool.Name, s.name, err)
			}
			var schema jsonschema.Schema
			if err := json.Unmarshal(raw, &schema); err != nil {
				t.Errorf("%s: %s schema does not decode: %v", tool.Name, s.name, err)
				continue
			}
			if _, err := schema.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true}); err != nil {
				t.Errorf("%s: %s schema does not resolve: %v", tool.Name, s.name, err)
			}
		}
	}
}

// listedAs is a schema listed as one JSON text and resolved from another
// schema, through the JSONSchema method the patched SDK looks for.
type listedAs struct {
	listed   string
	resolved *jsonschema.Schema
}

func (s listedAs) MarshalJSON() ([]byte, error)            { return []byte(s.listed), nil }
func (s listedAs) JSONSchema() (*jsonschema.Schema, error) { return s.resolved, nil }

// TestSDKResolvesTheSchemaSourceGives fails if the go-sdk in use decodes a
// schema's JSON on a tool's first call although the schema can give its
// *jsonschema.Schema (third_party/go-sdk/README.md; aipm lists the JSON of
// schemas/ and validates with the inferred schema, which costs less to get
// than decoding). Here the two differ on purpose: the listing allows
// anything, the schema given requires n.
func TestSDKResolvesTheSchemaSourceGives(t *testing.T) {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "source"}, nil)
	type in struct {
		N int `json:"n"`
	}
	required, err := jsonschema.For[in](nil)
	if err != nil {
		t.Fatal(err)
	}
	mcp.AddTool(server, &mcp.Tool{
		Name:        "source",
		InputSchema: listedAs{listed: `{"type":"object"}`, resolved: required},
	}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, in, error) {
		return nil, a, nil
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "source"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 {
		t.Fatalf("list: %v %+v", err, tools)
	}
	if listed, _ := json.Marshal(tools.Tools[0].InputSchema); string(listed) != `{"type":"object"}` {
		t.Errorf("listed input schema %s, want the JSON given", listed)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "source", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError {
		t.Error("a call without n passed: the SDK validated with the listed JSON, not the schema JSONSchema gave (is the go-sdk change in third_party/go-sdk lost?)")
	}
}
