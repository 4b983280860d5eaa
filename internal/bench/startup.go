package bench

import (
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// startup is P4: starting aipm serve to its first response that reads the
// project (authenticate: config, passkey, sessions, the chat-work check),
// beside starting `aipm version` (the process start itself); and P4v, that
// process start beside a hello-world Go binary's, interleaved.
func (b *bench) startup() ([]Row, error) {
	b.progress("P4: %d server starts", b.starts)
	store, keys, err := b.project("p4", "a")
	if err != nil {
		return nil, err
	}
	hello, helloLabel := b.helloFloor()
	var serveLat, versionLat, helloLat []time.Duration
	var usage cpuUsage
	for i := 0; i < b.starts; i++ {
		b.doing.set(fmt.Sprintf("P4: start %d of %d, aipm serve -> authenticate", i+1, b.starts))
		for _, run := range []struct {
			argv []string
			lat  *[]time.Duration
		}{{hello, &helloLat}, {[]string{b.aipm, "version"}, &versionLat}} {
			start := time.Now()
			if err := b.command(run.argv[0], run.argv[1:]...).Run(); err != nil {
				return nil, err
			}
			*run.lat = append(*run.lat, time.Since(start))
		}

		if err := store.Triggers().Write(b.ctx, fsstore.Trigger{Agent: "a", Purpose: fsstore.PurposeChat, Reason: "bench"}); err != nil {
			return nil, err
		}
		start := time.Now()
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
	for _, s := range [][]time.Duration{serveLat, versionLat, helloLat} {
		slices.Sort(s)
	}
	p50, version, hello50 := percentile(serveLat, 50), percentile(versionLat, 50), percentile(helloLat, 50)
	return []Row{Row{
		id: "P4", what: "aipm serve start -> first authenticate p50",
		aipm: ms(p50), floor: ms(version) + " (aipm version)",
		compared: signedMs(p50 - version), target: fmt.Sprintf("<= %d ms", serveStartTarget),
		cpu: usage.String(), aipmValues: median(serveLat), floorValues: median(versionLat),
	}.judged(atMost("p50", msOf(p50), serveStartTarget, "ms")), Row{
		id: "P4v", what: "aipm version p50 (process start)",
		aipm: ms(version), floor: ms(hello50) + " (" + helloLabel + ")",
		compared: signedMs(version - hello50), target: fmt.Sprintf("<= floor + %d ms", versionOverHello),
		aipmValues: median(versionLat), floorValues: median(helloLat),
	}.judged(atMost("p50 - floor p50", msOf(version-hello50), versionOverHello, "ms"))}, nil
}
