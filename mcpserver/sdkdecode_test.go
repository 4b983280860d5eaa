package mcpserver_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSDKDecodeAllocations fails if the go-sdk in use allocates a decoder
// buffer for every JSON value it unmarshals (third_party/go-sdk/README.md):
// v1.8.0 as released allocates about 32 KiB per value, some 15 values per
// tool round trip; the patched copy parses the bytes in place.
func TestSDKDecodeAllocations(t *testing.T) {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "decode"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	type out struct {
		Text string `json:"text"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, out, error) {
		return nil, out(a), nil
	})
	cs := connectInProcess(t, server)
	roundTrip := func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}})
		if err != nil || res.IsError {
			t.Fatalf("echo: %v %+v", err, res)
		}
	}
	for range 20 {
		roundTrip()
	}
	const calls = 200
	perCall := bytesPerCall(calls, roundTrip)
	t.Logf("%d bytes allocated per round trip (client and server)", perCall)
	// Patched: about 30 KB. Unpatched: about 490 KB.
	const limit = 100 << 10
	if perCall > limit {
		t.Errorf("a tool round trip allocates %d bytes, more than %d: is the go-sdk decode fix (third_party/go-sdk) lost?", perCall, limit)
	}
}

// bytesPerCall is the number of bytes allocated per call of f, over n
// calls.
func bytesPerCall(n int, f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(n)
}
