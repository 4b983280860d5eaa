package bench

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// startup is P4: starting aipm serve to its first response that reads the
// project (authenticate: config, passkey, sessions, the chat-work check),
// beside the SDK floor started the same way to its one tool's answer; and
// P4v, aipm version's process start beside the SDK floor binary's bare
// start. The four are interleaved, so that each sample of all four sees the
// same machine.
func (b *bench) startup() ([]Row, error) {
	b.progress("P4: %d server starts, each beside the SDK floor's", b.starts)
	store, keys, err := b.project("p4", "a")
	if err != nil {
		return nil, err
	}
	floor, err := b.sdkFloor()
	if err != nil {
		return nil, err
	}
	var serveLat, floorLat, versionLat, bareLat []time.Duration
	var usage cpuUsage
	for i := 0; i < b.starts; i++ {
		b.doing.set(fmt.Sprintf("P4: start %d of %d, aipm serve -> authenticate", i+1, b.starts))
		for _, run := range []struct {
			argv []string
			lat  *[]time.Duration
		}{{[]string{floor.bin, "version"}, &bareLat}, {[]string{b.aipm, "version"}, &versionLat}} {
			start := time.Now()
			if err := b.command(run.argv[0], run.argv[1:]...).Run(); err != nil {
				return nil, err
			}
			*run.lat = append(*run.lat, time.Since(start))
		}
		took, err := floor.start(b)
		if err != nil {
			return nil, err
		}
		floorLat = append(floorLat, took)

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
	for _, s := range [][]time.Duration{serveLat, floorLat, versionLat, bareLat} {
		slices.Sort(s)
	}
	p50, floor50, version, bare := percentile(serveLat, 50), percentile(floorLat, 50), percentile(versionLat, 50), percentile(bareLat, 50)
	return []Row{Row{
		id: "P4", what: "aipm serve start -> first authenticate p50",
		aipm: ms(p50), floor: ms(floor50) + " (SDK floor: start -> its tool answered)",
		compared: signedMs(p50 - floor50), target: fmt.Sprintf("<= floor + %d ms", serveStartOver),
		cpu: usage.String(), aipmValues: median(serveLat), floorValues: median(floorLat),
	}.judged(atMost("p50 - floor p50", msOf(p50-floor50), serveStartOver, "ms")), Row{
		id: "P4v", what: "aipm version p50 (process start)",
		aipm: ms(version), floor: ms(bare) + " (SDK floor binary's bare start)",
		compared: signedMs(version - bare), target: fmt.Sprintf("<= floor + %d ms", versionOverSDK),
		aipmValues: median(versionLat), floorValues: median(bareLat),
	}.judged(atMost("p50 - floor p50", msOf(version-bare), versionOverSDK, "ms"))}, nil
}

// sdkFloorBin is the SDK floor (internal/bench/sdkfloor): a program that
// links only the MCP SDK and serves one tool reading one small file.
type sdkFloorBin struct {
	bin, file string
}

// sdkFloor is the SDK floor's binary, built once a run from aipm's module
// as README's install builds aipm (CGO_ENABLED=0), and the small file its
// tool reads.
func (b *bench) sdkFloor() (sdkFloorBin, error) {
	fl := sdkFloorBin{bin: filepath.Join(b.root, "sdkfloor"), file: filepath.Join(b.root, "sdkfloor.txt")}
	if fi, err := os.Stat(fl.bin); err == nil && fi.Mode().IsRegular() {
		return fl, nil
	}
	if _, err := exec.LookPath("go"); err != nil {
		return fl, errors.New("bench: the SDK floor (aipm/internal/bench/sdkfloor) is built with the go command, and there is none on PATH: run aipm-bench inside aipm's module with Go installed")
	}
	if err := os.WriteFile(fl.file, []byte("the SDK floor's small file\n"), 0o644); err != nil {
		return fl, fmt.Errorf("bench: the SDK floor's file: %w", err)
	}
	cmd := b.command("go", "build", "-o", fl.bin, "aipm/internal/bench/sdkfloor")
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fl, fmt.Errorf("bench: go build of the SDK floor (aipm/internal/bench/sdkfloor) failed, run aipm-bench inside aipm's module: %v: %s", err, out)
	}
	return fl, nil
}

// start times one SDK floor start as P4 times aipm serve's: exec ->
// initialize -> its one tools/call answered.
func (fl sdkFloorBin) start(b *bench) (time.Duration, error) {
	start := time.Now()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "aipm-bench"}, nil).Connect(b.ctx, &mcp.CommandTransport{Command: b.command(fl.bin, fl.file)}, nil)
	if err != nil {
		return 0, fmt.Errorf("bench: the SDK floor's initialize: %w", err)
	}
	defer cs.Close()
	var out struct{ Text string }
	if err := callTool(b.ctx, cs, "read", map[string]any{}, &out); err != nil {
		return 0, fmt.Errorf("bench: the SDK floor's tools/call: %w", err)
	}
	if out.Text == "" {
		return 0, errors.New("bench: the SDK floor's tool answered no text")
	}
	return time.Since(start), nil
}
