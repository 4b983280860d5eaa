package mcpserver_test

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkServeStart measures P4 (DESIGN section 13): from starting the
// aipm serve process to its first tool response (initialize handshake and
// one help call included), beside the floor of starting `aipm version`.
//
//	go test -run '^$' -bench ServeStart ./mcpserver
func BenchmarkServeStart(b *testing.B) {
	p := newProject(b)
	b.Run("impl=floor", func(b *testing.B) {
		lat := make([]time.Duration, 0, 256)
		for b.Loop() {
			start := time.Now()
			if err := exec.Command(aipmBin, "version").Run(); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		report(b, lat)
	})
	b.Run("impl=serve", func(b *testing.B) {
		client := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil)
		ctx := context.Background()
		lat := make([]time.Duration, 0, 256)
		for b.Loop() {
			start := time.Now()
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(aipmBin, "--dir", p.store.ProjectDir(), "serve")}, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "help", Arguments: map[string]any{}}); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
			cs.Close()
		}
		report(b, lat)
	})
}

func report(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
