package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"aipm/mcpserver"
)

// TestServedSchemas: the schemas aipm serves from schemas/ are, byte for
// byte on the wire, the ones inferred from the tools' Go types, and every
// file there belongs to a tool. schemas/ is the one committed copy of every
// tool's schemas: indented, in the order the SDK writes them, so that a
// schema change is a readable diff (the wire is compact all the same).
// After changing a tool's types, rewrite them from the inference, with the
// rest of the tools' listing (TestToolSnapshots), and review the diff:
//
//	UPDATE_TOOLSNAPS=1 go test ./mcpserver -run 'TestServedSchemas|TestToolSnapshots'
//	git diff mcpserver/schemas mcpserver/testdata/toolsnaps
func TestServedSchemas(t *testing.T) {
	p := newProject(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	inferring := mcpserver.New(p.store, log, "test")
	inferring.SDKTools()
	want := listToolsWire(t, inferring.MCP(), "")
	dir := filepath.Join("schemas")
	files := map[string][]byte{}
	for _, tool := range gjson.Get(want, "result.tools").Array() {
		name := tool.Get("name").String()
		files[name+".input.json"] = indented(t, tool.Get("inputSchema").Raw)
		files[name+".output.json"] = indented(t, tool.Get("outputSchema").Raw)
	}
	if len(files) == 0 {
		t.Fatalf("no tools listed: %s", want)
	}
	if os.Getenv("UPDATE_TOOLSNAPS") == "1" {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if files[e.Name()] == nil {
				os.Remove(filepath.Join(dir, e.Name()))
			}
		}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Log("rewrote mcpserver/schemas; rebuild for the served copy to follow")
		return
	}
	for name, data := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("schemas/%s differs from the inferred schema (run UPDATE_TOOLSNAPS=1 go test ./mcpserver -run 'TestServedSchemas|TestToolSnapshots' and review the diff): %v", name, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if files[e.Name()] == nil {
			t.Errorf("schemas/%s belongs to no tool: remove it", e.Name())
		}
	}
	got := listToolsWire(t, mcpserver.New(p.store, log, "test").MCP(), "")
	if got != want {
		t.Errorf("tools/list served from schemas/ differs from the inferred one:\nserved:   %s\ninferred: %s", got, want)
	}
}

// indented is a schema file's text: raw indented, keys in raw's order.
func indented(t *testing.T, raw string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(raw), "", "  "); err != nil {
		t.Fatalf("indent %.100s: %v", raw, err)
	}
	return append(b.Bytes(), '\n')
}

// listToolsWire returns the line srv writes in answer to tools/list, asked
// by the SDK's client at protocol revision protocol ("" for its newest).
func listToolsWire(t *testing.T, srv *mcp.Server, protocol string) string {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	answers := make(chan string, 1)
	wire := writerFunc(func(line string) {
		// LoggingTransport writes each message it sent as one "write: " line.
		if msg, ok := strings.CutPrefix(line, "write: "); ok && gjson.Get(msg, "result.tools").Exists() {
			answers <- strings.TrimSuffix(msg, "\n")
		}
	})
	ss, err := srv.Connect(ctx, &mcp.LoggingTransport{Transport: st, Writer: wire}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "schemas"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return <-answers
}

// writerFunc is an io.Writer calling f with each write.
type writerFunc func(string)

func (f writerFunc) Write(p []byte) (int, error) {
	f(string(p))
	return len(p), nil
}

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

// TestRawSchemaChecked: the SDK's Server.AddTool, which takes aipm's
// served schemas as JSON without encoding them again (third_party/go-sdk,
// second change), still refuses one that is not exactly one JSON value,
// input or output, as json.Marshal refused it: a schema with bytes after
// it would otherwise be listed as is, and a client's tools/list fail.
func TestRawSchemaChecked(t *testing.T) {
	handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil }
	object := json.RawMessage(`{"type":"object"}`)
	for _, tc := range []struct {
		name    string
		in, out json.RawMessage
		refused bool
	}{
		{"input and output whole", object, object, false},
		{"output nil (null)", object, nil, false},
		{"input with bytes after it", json.RawMessage(`{"type":"object"} junk`), object, true},
		{"input of two values", json.RawMessage(`{"type":"object"}{}`), object, true},
		{"output with bytes after it", object, json.RawMessage(`{"type":"object"}]`), true},
		{"output cut short", object, json.RawMessage(`{"type":`), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool := &mcp.Tool{Name: "probe", InputSchema: tc.in, OutputSchema: tc.out} // a nil one too: JSON null
			refused := func() (refused bool) {
				defer func() { refused = recover() != nil }()
				mcp.NewServer(&mcp.Implementation{Name: "t"}, nil).AddTool(tool, handler)
				return false
			}()
			if refused != tc.refused {
				t.Errorf("AddTool refused it: %v, want %v", refused, tc.refused)
			}
		})
	}
}
