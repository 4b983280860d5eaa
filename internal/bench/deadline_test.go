package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// childEnv makes this test binary, started by a test as the aipm the bench
// measures, a stand-in for aipm serve that exits early (TestMain).
const childEnv = "AIPM_BENCH_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "http-exits": // aipm serve --http: prints its URL, then exits
		fmt.Println("http://127.0.0.1:9/mcp")
		time.Sleep(100 * time.Millisecond)
		os.Exit(3)
	case "serve-exits": // aipm serve: answers authenticate, then exits while get_next_action waits
		serveThenExit()
	}
	os.Exit(m.Run())
}

// serveThenExit is an MCP server on stdio whose authenticate answers a
// session token and whose get_next_action waits; the process exits 200 ms
// after authenticate answered.
func serveThenExit() {
	s := mcp.NewServer(&mcp.Implementation{Name: "aipm", Version: "test"}, nil)
	type token struct {
		SessionToken string `json:"session_token"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "authenticate"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, token, error) {
		time.AfterFunc(200*time.Millisecond, func() { os.Exit(4) })
		return nil, token{"tok"}, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "get_next_action"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	s.Run(context.Background(), &mcp.StdioTransport{})
	os.Exit(0)
}

// testBench is a bench for fake targets: a root of its own, a short grace.
func testBench(t *testing.T) *bench {
	t.Helper()
	return &bench{ctx: context.Background(), log: io.Discard, root: t.TempDir(), grace: 300 * time.Millisecond}
}

// TestDeadline: a target that passes its deadline gives its rows not met,
// each saying it did not finish in time and what it was waiting for; one
// that never returns is left behind after the grace with what it was last
// at; the run goes on with the next target, and ends with ErrNotMeasured
// naming the rows not measured.
func TestDeadline(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	targets := []target{{
		// returns when its context ends, with what it waited for
		names: []string{"P1"}, rows: []string{"P1", "P1r"}, what: "delivery",
		run: func(b *bench) ([]Row, error) {
			if err := newLineCounter("msg=waiting").waitPast(b.ctx, 0); err != nil {
				return nil, fmt.Errorf("P1: %w", err)
			}
			return []Row{{id: "P1", met: true}}, nil
		},
	}, {
		// never returns: ignores its context
		names: []string{"P2"}, rows: []string{"P2"}, what: "throughput",
		run: func(b *bench) ([]Row, error) {
			b.doing.set("waiting for a wake that never comes")
			<-release
			return nil, nil
		},
	}, {
		// finishes in time
		names: []string{"P4"}, rows: []string{"P4"}, what: "start",
		run: func(b *bench) ([]Row, error) {
			return []Row{Row{id: "P4", aipm: "1.00 ms"}.judged(atMost("p50", 1, 20, "ms"))}, nil
		},
	}}
	start := time.Now()
	rows, err := testBench(t).runAll(targets, func(target) time.Duration { return 100 * time.Millisecond })
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the run took %s: the deadlines (100ms, grace 300ms) did not end it", took)
	}
	if !errors.Is(err, ErrNotMeasured) || err.Error() != "not measured: P1, P1r, P2 (their rows say why)" {
		t.Errorf("runAll: %v, want ErrNotMeasured naming P1, P1r and P2", err)
	}
	late := `did not finish in 100ms: P1: waiting for the server to log "msg=waiting"`
	hung := "did not finish in 100ms: still running 300ms after that, left behind; it last was at: waiting for a wake that never comes"
	want := []struct {
		id, what, aipm, err string
		met                 bool
	}{
		{"P1", "delivery", "not measured: " + late, late, false},
		{"P1r", "delivery", "not measured: " + late, late, false},
		{"P2", "throughput", "not measured: " + hung, hung, false},
		{"P4", "", "1.00 ms", "", true},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for i, w := range want {
		r := rows[i]
		if r.id != w.id || r.what != w.what || r.aipm != w.aipm || r.err != w.err || r.met != w.met {
			t.Errorf("row %d: %+v, want %+v", i, r, w)
		}
		if w.err != "" && (r.floor != "-" || r.compared != "-" || r.target != "-" || r.JSON()["error"] != w.err) {
			t.Errorf("row %s: %+v, --json %v", r.id, r, r.JSON())
		}
	}
}

// TestInterruptStopsRun: the run's own end (an interrupt) is an error,
// not a row, and the targets after it do not run.
func TestInterruptStopsRun(t *testing.T) {
	b := testBench(t)
	ctx, cancel := context.WithCancel(context.Background())
	b.ctx = ctx
	ran := false
	_, err := b.runAll([]target{{
		names: []string{"P1"}, rows: []string{"P1"},
		run: func(b *bench) ([]Row, error) {
			cancel()
			<-b.ctx.Done()
			return nil, b.ctx.Err()
		},
	}, {
		names: []string{"P2"}, rows: []string{"P2"},
		run: func(b *bench) ([]Row, error) { ran = true; return nil, nil },
	}}, func(target) time.Duration { return time.Minute })
	if !errors.Is(err, context.Canceled) || ran {
		t.Errorf("runAll: %v (the next target ran: %v), want context.Canceled and no more targets", err, ran)
	}
}

// TestChildExits: when a server the bench started exits, the client that
// waits on it fails at once, not at the deadline (a minute here): over
// HTTP (aipm serve --http exits while a client waits for its log line, as
// P10 once hung) and over stdio (aipm serve exits while get_next_action
// waits, as in P1). The row says it failed and why.
func TestChildExits(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, child string
		run         func(b *bench) ([]Row, error)
		want        []string // in the row's note
	}{
		{"http", "http-exits", func(b *bench) ([]Row, error) {
			store, _, err := b.project("p10-http", "a")
			if err != nil {
				return nil, err
			}
			waiting := newLineCounter("msg=waiting")
			l, err := b.startHTTP(store, waiting)
			if err != nil {
				return nil, err
			}
			defer l.close()
			if err := waiting.waitPast(b.ctx, 0); err != nil {
				return nil, fmt.Errorf("P10 over http: %w", err)
			}
			return nil, errors.New("the server logged that it waits")
		}, []string{`failed: P10 over http: waiting for the server to log "msg=waiting": aipm serve --http exited (exit status 3)`}},
		{"stdio", "serve-exits", func(b *bench) ([]Row, error) {
			store, keys, err := b.project("p1", "b")
			if err != nil {
				return nil, err
			}
			waiting := newLineCounter("msg=waiting")
			sb, err := b.serve(store, "b", keys["b"], waiting)
			if err != nil {
				return nil, err
			}
			defer sb.close()
			if _, _, err := b.wake(sb, waiting, "get_pending_messages", func() error { return nil }); err != nil {
				return nil, err
			}
			return nil, errors.New("woke")
		}, []string{`failed: waiting for the server to log "msg=waiting": `}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(childEnv, tc.child)
			b := testBench(t)
			b.aipm = self
			start := time.Now()
			rows, err := b.runAll([]target{{names: []string{"P0"}, rows: []string{"P0"}, what: "a server that exits", run: tc.run}},
				func(target) time.Duration { return time.Minute })
			if took := time.Since(start); took > 15*time.Second {
				t.Errorf("the row took %s to fail", took)
			}
			if !errors.Is(err, ErrNotMeasured) || len(rows) != 1 || rows[0].met {
				t.Fatalf("runAll: %v, rows %+v", err, rows)
			}
			for _, w := range tc.want {
				if !strings.Contains(rows[0].err, w) {
					t.Errorf("note %q, want it to hold %q", rows[0].err, w)
				}
			}
			t.Log(rows[0].err)
		})
	}
}

// TestWaitedFor: a deadline's note is what the measurement waited for,
// without the deadline's own words, and where it was when its error does
// not say.
func TestWaitedFor(t *testing.T) {
	deadline := errDeadline{2 * time.Minute}
	for _, tc := range []struct {
		name, err, at, want string
	}{
		{"a bare deadline", "context deadline exceeded", "P4: start 3 of 10", ": P4: start 3 of 10"},
		{"the cause itself", "did not finish in 2m0s", "P4: start 3 of 10", ": P4: start 3 of 10"},
		{"a call", "send_message: context deadline exceeded", "waiting for b's get_next_action to answer", ": send_message (at: waiting for b's get_next_action to answer)"},
		{"a wait with its cause", `waiting for the server to log "msg=waiting": did not finish in 2m0s`, "", `: waiting for the server to log "msg=waiting"`},
		{"at already said", "P2: 8 servers sending 100 messages each: context deadline exceeded", "8 servers sending 100 messages each", ": P2: 8 servers sending 100 messages each"},
		{"nothing known", "context deadline exceeded", "", ""},
	} {
		if got := waitedFor(errors.New(tc.err), deadline, tc.at); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
