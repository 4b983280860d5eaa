package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"aipm/fsstore"
	"aipm/internal/fixtures"
)

// history1M is P3 (get_pending_messages with a long history against a short
// one) and P5 (resident memory of the server with that history).
func (b *bench) history1M() ([]Row, error) {
	b.progress("P3/P5: get_pending_messages after %d lines of history vs 100", b.history)
	long, rssLong, err := b.pendingLatency("p3-long", b.history)
	if err != nil {
		return nil, err
	}
	short, rssShort, err := b.pendingLatency("p3-short", 100)
	if err != nil {
		return nil, err
	}
	ratio := float64(percentile(long, 50)) / float64(percentile(short, 50))
	lines := fmt.Sprintf("%d", b.history)
	if b.history == 1_000_000 {
		lines = "1,000,000"
	}
	memory := Row{
		id: "P5", what: "aipm serve resident memory (peak), " + lines + " lines",
		aipm: fmt.Sprintf("%.1f MB", rssLong), floor: fmt.Sprintf("%.1f MB (100 lines)", rssShort),
		compared: fmt.Sprintf("%+.1f MB", rssLong-rssShort), target: fmt.Sprintf("<= %d MB", rssTarget),
		aipmValues: values{"peak_rss_mb": rssLong}, floorValues: values{"peak_rss_mb": rssShort},
	}.judged(atMost("peak RSS", rssLong, rssTarget, "MB"))
	return []Row{Row{
		id: "P3", what: "get_pending_messages p50, " + lines + " lines vs 100",
		aipm: ms(percentile(long, 50)), floor: ms(percentile(short, 50)) + " (100 lines)",
		compared: fmt.Sprintf("%.2fx", ratio), target: "<= 1.5x",
		aipmValues: median(long), floorValues: median(short),
	}.judged(atMost("p50 / floor p50", ratio, 1.5, "x")), memory}, nil
}

// pendingLatency fills agent r's chat log with history lines that r has
// read, then times get_pending_messages, each after one new message; it
// returns the latencies and the server's peak resident memory in MB.
func (b *bench) pendingLatency(name string, history int) ([]time.Duration, float64, error) {
	store, keys, err := b.project(name, "r", "w")
	if err != nil {
		return nil, 0, err
	}
	path, _ := store.ChatPath("r")
	if err := writeHistory(store, path, history); err != nil {
		return nil, 0, err
	}
	// r has read all of it: pass the cursor over every line once.
	if err := store.CatchUp(b.ctx, "r"); err != nil {
		return nil, 0, err
	}
	return b.timePending(store, keys)
}

// timePending times get_pending_messages in r's chat session, each after
// one new message from w; it returns the latencies and the server's peak
// resident memory in MB.
func (b *bench) timePending(store *fsstore.Store, keys map[string]string) ([]time.Duration, float64, error) {
	cfg, err := store.LoadConfig()
	if err != nil {
		return nil, 0, err
	}
	s, err := b.serve(store, "r", keys["r"], io.Discard)
	if err != nil {
		return nil, 0, err
	}
	defer s.close()
	var lat []time.Duration
	for i := 0; i < b.reads; i++ {
		if _, err := store.Send(b.ctx, cfg, fsstore.OutgoingMessage{From: "w", To: "r", Content: "new " + strconv.Itoa(i)}); err != nil {
			return nil, 0, err
		}
		var out struct {
			Messages []json.RawMessage `json:"pending_messages"`
		}
		start := time.Now()
		if err := s.call(b.ctx, "get_pending_messages", map[string]any{}, &out); err != nil {
			return nil, 0, err
		}
		lat = append(lat, time.Since(start))
		if len(out.Messages) != 1 {
			return nil, 0, fmt.Errorf("get_pending_messages returned %d messages, want 1", len(out.Messages))
		}
	}
	slices.Sort(lat)
	return lat, peakRSS(s.cmd.Process.Pid), nil
}

// writeHistory writes n chat lines as other agents' messages.
func writeHistory(store *fsstore.Store, path string, n int) error {
	return fixtures.Of(store).Lines(path, n, func(i int) any {
		return fsstore.Message{ID: fsstore.NewID(fsstore.PrefixMessage), SenderID: "w", Content: fmt.Sprintf("history line %d: a message of ordinary length, about like this one", i), CreatedAt: "2026-11-21T12:00:00.000000Z"}
	})
}
