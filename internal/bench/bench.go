// Package bench is the body of aipm-bench (cmd/aipm-bench): it measures
// DESIGN's performance targets (section 13), each beside its raw floor
// measured in the same run, with real aipm serve processes driven by the
// MCP SDK's client over stdio, in throw-away projects with fsync on. The
// floors' helper processes (FloorReader, FloorWriter, FloorServer) are
// hidden commands of aipm-bench itself, so that the aipm binary measured
// holds nothing of the bench.
package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"aipm/fsstore"
)

// Options are what one run measures, and with what.
type Options struct {
	Quick      bool          // fewer iterations and a 100,000-line history (a smoke run)
	Only       []string      // the targets to measure (P1 to P10 or P12, or a row of one); all when empty
	Aipm       string        // the aipm binary measured: every aipm process the bench starts is one
	Self       string        // the bench's own binary, which runs the floors' helpers (bench-floor-reader ...)
	Log        io.Writer     // progress lines
	RowTimeout time.Duration // every target's deadline; 0: each its own (targets), quickTimeout with Quick
}

// Run measures the performance targets of DESIGN section 13, each beside
// its raw floor measured in the same run, and returns the rows in id order.
// Each target has a deadline (runTarget); the rows of one that failed or
// passed it are not met and say why, the run goes on, and the error
// returned with all the rows is ErrNotMeasured naming them.
func Run(ctx context.Context, opt Options) ([]Row, error) {
	b := &bench{ctx: ctx, log: opt.Log, aipm: opt.Aipm, self: opt.Self, grace: defaultGrace, deliveries: 2000, sends: 400, reads: 200, history: 1_000_000, starts: 30, hooks: 300, webSamples: 1000, renders: 20}
	if opt.Quick {
		b.deliveries, b.sends, b.reads, b.history, b.starts, b.hooks, b.webSamples, b.renders = 40, 50, 40, 100_000, 10, 8, 10, 5
	}
	measures, err := b.measures(opt.Only)
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "aipm-bench-*")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer os.RemoveAll(root)
	b.root = root
	return b.runAll(measures, func(t target) time.Duration {
		switch {
		case opt.RowTimeout > 0:
			return opt.RowTimeout
		case opt.Quick:
			return quickTimeout
		}
		return t.timeout
	})
}

// runAll runs the targets in turn, each with its deadline, and returns
// their rows in id order, with ErrNotMeasured naming those not measured.
func (b *bench) runAll(targets []target, timeout func(target) time.Duration) ([]Row, error) {
	var rows []Row
	var failed []string
	for _, t := range targets {
		r, err := b.runTarget(t, timeout(t))
		if err != nil {
			return nil, err
		}
		for _, row := range r {
			if row.err != "" {
				failed = append(failed, row.id)
			}
		}
		rows = append(rows, r...)
	}
	slices.SortFunc(rows, func(a, b Row) int { return compareIDs(a.id, b.id) })
	if len(failed) > 0 {
		slices.SortFunc(failed, compareIDs)
		return rows, fmt.Errorf("%w: %s (their rows say why)", ErrNotMeasured, strings.Join(failed, ", "))
	}
	return rows, nil
}

type bench struct {
	aipm, self, root string
	ctx              context.Context         // the target's (runTarget): its end kills the target's processes
	fail             context.CancelCauseFunc // ends ctx with a cause (failWith)
	doing            *doing                  // what the target was last at
	grace            time.Duration           // how long a target may take to return once its ctx ended
	log              io.Writer

	deliveries, sends, reads, history, starts int
	hooks                                     int // P8's samples of each row
	webSamples, renders                       int // P9a's samples, P9b's navigations of each project
}

func (b *bench) progress(format string, args ...any) {
	b.doing.set(fmt.Sprintf(format, args...))
	fmt.Fprintf(b.log, "bench: "+format+"\n", args...)
}

// project makes a fresh project with the given AI agents and their passkeys.
func (b *bench) project(name string, agents ...string) (*fsstore.Store, map[string]string, error) {
	dir := filepath.Join(b.root, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, nil, err
	}
	store, err := fsstore.Init(dir, name)
	if err != nil {
		return nil, nil, err
	}
	keys := map[string]string{}
	for _, a := range agents {
		if keys[a], err = store.AddAgent(b.ctx, fsstore.NewAgent{ID: a, Type: fsstore.AgentAI}); err != nil {
			return nil, nil, err
		}
	}
	return store, keys, nil
}
