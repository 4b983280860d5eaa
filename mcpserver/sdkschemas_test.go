package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"aipm/mcpserver"
)

// TestEveryToolSchemaResolves: a tool's schemas are resolved when the tool
// is first called (toolcall.go), so this test does at once what the SDK's
// mcp.AddTool does at start: every input and output schema aipm serves
// resolves, defaults checked.
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

// TestRegistrationAllocations fails if registering aipm's tools costs
// what it did before their schemas were served from schemas/ and the SDK's
// Server.AddTool stopped decoding them into maps (third_party/go-sdk,
// second change): MCP() allocated 3.1 MB with inferred schemas, about
// 580 KB with the released Server.AddTool, and now about 150 KB.
func TestRegistrationAllocations(t *testing.T) {
	p := newProject(t)
	s := mcpserver.New(p.store, slog.New(slog.NewTextHandler(io.Discard, nil)), "test")
	s.MCP() // once, for what is made once per process
	perMCP := bytesPerCall(10, func() { s.MCP() })
	t.Logf("MCP() allocates %d bytes", perMCP)
	const limit = 400 << 10
	if perMCP > limit {
		t.Errorf("MCP() allocates %d bytes, more than %d: are the tool schemas decoded at registration again (third_party/go-sdk, mcpserver/schemas)?", perMCP, limit)
	}
}
