package bench

import (
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
	"aipm/fsstore/storage"
)

// startup is P4: starting aipm serve to its first response that reads the
// project (authenticate: config, passkey, sessions, the chat-work check),
// beside starting `aipm version` (the process start itself).
func (b *bench) startup() ([]Row, error) {
	b.progress("P4: %d server starts", b.starts)
	store, keys, err := b.project("p4", "a")
	if err != nil {
		return nil, err
	}
	var serveLat, floorLat []time.Duration
	var usage cpuUsage
	for i := 0; i < b.starts; i++ {
		b.doing.set(fmt.Sprintf("P4: start %d of %d, aipm serve -> authenticate", i+1, b.starts))
		start := time.Now()
		if err := b.command(b.aipm, "version").Run(); err != nil {
			return nil, err
		}
		floorLat = append(floorLat, time.Since(start))

		if err := store.Triggers().Write(b.ctx, fsstore.Trigger{Agent: "a", Purpose: storage.PurposeChat, Reason: "bench"}); err != nil {
			return nil, err
		}
		start = time.Now()
		usage.start()
		cmd := b.command(b.aipm, "--dir", store.ProjectDir(), "serve")
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "aipm-bench"}, nil).Connect(b.ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			return nil, err
		}
		if err := callTool(b.ctx, cs, "authenticate", map[string]any{"agent_id": "a", "passkey": keys["a"]}, nil); err != nil {
			return nil, err
		}
		serveLat = append(serveLat, time.Since(start))
		usage.stop()
		cs.Close()
	}
	slices.Sort(serveLat)
	slices.Sort(floorLat)
	p50 := percentile(serveLat, 50)
	return []Row{Row{
		id: "P4", what: "aipm serve start -> first authenticate p50",
		aipm: ms(p50), floor: ms(percentile(floorLat, 50)) + " (aipm version)",
		compared: signedMs(p50 - percentile(floorLat, 50)), target: "<= 20 ms",
		cpu: usage.String(), aipmValues: median(serveLat), floorValues: median(floorLat),
	}.judged(atMost("p50", msOf(p50), 20, "ms"))}, nil
}
