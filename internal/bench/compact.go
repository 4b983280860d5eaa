package bench

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"aipm/fsstore"
	"aipm/internal/fixtures"
)

// retention is the chat_lines the compaction rows keep.
const retention = 10_000

// compacted is P3c and P3s: a project with b.history messages (both
// copies: r's inbox, all read, and w's sent copies) compacted to a
// retention of 10,000 chat lines; P3c is P3 again after the compaction
// (get_pending_messages against 100 lines of history, the same target),
// P3s the size of .ai-pm/ after it beside the size without.
func (b *bench) compacted() ([]Row, error) {
	b.progress("P3c/P3s: %d messages, compacted to %d chat lines", b.history, retention)
	store, keys, err := b.project("p3c", "r", "w")
	if err != nil {
		return nil, err
	}
	rpath, _ := store.ChatPath("r")
	wpath, _ := store.ChatPath("w")
	if err := writeHistory(store, rpath, b.history); err != nil {
		return nil, err
	}
	if err := fixtures.Of(store).Lines(wpath, b.history, func(i int) any {
		return fsstore.Message{ID: fsstore.NewID(fsstore.PrefixMessage), SenderID: "w", ReceiverID: "r", Content: fmt.Sprintf("history line %d: a message of ordinary length, about like this one", i), CreatedAt: "2026-11-21T12:00:00.000000Z"}
	}); err != nil {
		return nil, err
	}
	if err := store.CatchUp(b.ctx, "r"); err != nil {
		return nil, err
	}
	before, err := dirSize(store.Root())
	if err != nil {
		return nil, err
	}
	took, err := compactTo(b, store, retention)
	if err != nil {
		return nil, err
	}
	after, err := dirSize(store.Root())
	if err != nil {
		return nil, err
	}
	long, _, err := b.timePending(store, keys)
	if err != nil {
		return nil, err
	}
	short, _, err := b.pendingLatency("p3c-short", 100)
	if err != nil {
		return nil, err
	}
	ratio := float64(percentile(long, 50)) / float64(percentile(short, 50))
	share := float64(retention) / float64(b.history)
	bound := int64(1.5*share*float64(before)) + 1<<20
	return []Row{Row{
		id: "P3c", what: fmt.Sprintf("get_pending_messages p50 after compaction, %d lines kept of %d vs 100", retention, b.history),
		aipm: ms(percentile(long, 50)), floor: ms(percentile(short, 50)) + " (100 lines)",
		compared: fmt.Sprintf("%.2fx", ratio), target: "<= 1.5x (P3's)",
		aipmValues: median(long), floorValues: median(short),
	}.judged(atMost("p50 / floor p50", ratio, 1.5, "x")), Row{
		id: "P3s", what: fmt.Sprintf(".ai-pm/ size, %d messages, chat_lines = %d (compaction took %s)", b.history, retention, took.Round(time.Millisecond)),
		aipm: mb(after), floor: mb(before) + " (not compacted)",
		compared: fmt.Sprintf("%.1f%% of it", 100*float64(after)/float64(before)), target: fmt.Sprintf("<= 1.5 x %.0f%% + 1 MB", 100*share),
		aipmValues: values{"size_mb": mbOf(after), "compaction_ms": msOf(took)}, floorValues: values{"size_mb": mbOf(before)},
	}.judged(atMost("size", mbOf(after), mbOf(bound), "MB"))}, nil
}

// ownSentCompacted is P6h: P6a (get_next_action over n of r's own sent
// copies) after a compaction to 10,000 chat lines.
func (b *bench) ownSentCompacted() ([]Row, error) {
	return b.piledUp("P6h", fmt.Sprintf("get_next_action over own sent copies, compacted to %d", retention), b.history, func(store *fsstore.Store, n int) error {
		if err := b.fillOwnSent(store, n); err != nil {
			return err
		}
		_, err := compactTo(b, store, retention)
		return err
	}, b.nextActionNotified, nil)
}

// compactTo compacts store with chat_lines = lines, as aipm compact does,
// and returns how long it took.
func compactTo(b *bench, store *fsstore.Store, lines int) (time.Duration, error) {
	cfg, err := store.LoadConfig()
	if err != nil {
		return 0, err
	}
	cfg.Retain.ChatLines = lines
	start := time.Now()
	if _, err := store.Compact(b.ctx, cfg, fsstore.CompactOptions{Wait: true}); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// dirSize is the size of the files under dir, in bytes.
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		fi, err := e.Info()
		if err == nil {
			n += fi.Size()
		}
		return nil
	})
	return n, err
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/(1<<20)) }
