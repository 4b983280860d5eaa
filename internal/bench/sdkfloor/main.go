// Command sdkfloor is the SDK floor of aipm-bench's P4, P4v and P7b (DESIGN
// 13): a program that links only the MCP SDK, registers one tool the way
// aipm registers its own (a typed handler, its schemas inferred) and serves
// stdio; the tool reads one small file. What aipm serve takes to start and
// answer beyond this program is aipm's own work.
//
//	sdkfloor FILE     serve over stdio; the tool "read" answers FILE's text
//	sdkfloor version  print a line and exit (the bare process start)
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type readIn struct {
	Note string `json:"note,omitempty" jsonschema:"ignored"`
}

type readOut struct {
	Text string `json:"text"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: sdkfloor FILE | sdkfloor version")
		os.Exit(2)
	}
	if os.Args[1] == "version" {
		fmt.Println("sdkfloor")
		return
	}
	path := os.Args[1]
	server := mcp.NewServer(&mcp.Implementation{Name: "sdkfloor", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "read", Description: "Reads the floor's file."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ readIn) (*mcp.CallToolResult, readOut, error) {
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, readOut{}, fmt.Errorf("read %s: %w", path, err)
			}
			return nil, readOut{Text: string(b)}, nil
		})
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "sdkfloor:", err)
		os.Exit(1)
	}
}
