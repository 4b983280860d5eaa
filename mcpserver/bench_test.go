package mcpserver_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
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

// waitLines is a server's stderr that signals on C for every debug line
// saying a get_next_action is waiting.
type waitLines struct {
	C   chan struct{}
	mu  sync.Mutex
	buf []byte
}

func (w *waitLines) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		if bytes.Contains(w.buf[:i], []byte("msg=waiting")) {
			w.C <- struct{}{}
		}
		w.buf = w.buf[i+1:]
	}
}

// BenchmarkWake measures how soon a waiting get_next_action in one aipm
// serve process answers a change made through another: a message
// (agents/<id>/chat.jsonl, watched by name), a conversation request
// (conversations/, watched as a directory) and a task moved back to
// in_progress (tasks/<id>.json). Each sample runs from the moment the
// other call is issued (or the task is written) to the waiting call's
// answer, both over real MCP over stdio; with durability "none" the fsyncs
// drop out and what remains is the wake and the reads and writes around it.
//
//	go test -run '^$' -bench Wake ./mcpserver
func BenchmarkWake(b *testing.B) {
	for _, durability := range []string{fsstore.DurableFsync, fsstore.DurableNone} {
		b.Run("durability="+durability, func(b *testing.B) { benchWake(b, durability) })
	}
}

func benchWake(b *testing.B, durability string) {
	p := newProject(b)
	setConfig(b, p, `durability = "fsync"`, fmt.Sprintf("durability = %q", durability))
	if _, err := p.store.LoadConfig(); err != nil { // the bench client's own writes follow it too
		b.Fatal(err)
	}
	a := p.connect("")
	lines := &waitLines{C: make(chan struct{}, 16)}
	w := p.connectWith("", []string{"AIPM_LOG=debug"}, lines)
	ta := p.authenticate(a, "coder", "chat")
	tw := p.authenticate(w, "reviewer", "chat")
	ctx := context.Background()
	sample := func(b *testing.B, cs *mcp.ClientSession, token string, act func(), want string) time.Duration {
		got := make(chan result, 1)
		go func() {
			got <- call(b, cs, "get_next_action", map[string]any{"session_token": token, "wait_seconds": 50})
		}()
		<-lines.C
		start := time.Now()
		act()
		r := <-got
		lat := time.Since(start)
		if r.str("action") != want {
			b.Fatalf("woke with %s, want %s", r.text, want)
		}
		return lat
	}
	b.Run("change=message", func(b *testing.B) {
		var lat []time.Duration
		for b.Loop() {
			lat = append(lat, sample(b, w, tw, func() {
				call(b, a, "send_message", map[string]any{"session_token": ta, "target_agent_id": "reviewer", "content": "ping"})
			}, "get_pending_messages"))
			call(b, w, "get_pending_messages", map[string]any{"session_token": tw})
		}
		report(b, lat)
	})
	b.Run("change=conversation", func(b *testing.B) {
		var lat []time.Duration
		for b.Loop() {
			lat = append(lat, sample(b, w, tw, func() {
				call(b, a, "start_conversation", map[string]any{"session_token": ta, "target_agent_id": "reviewer"})
			}, "conversation_request"))
			call(b, w, "end_conversation", map[string]any{"session_token": tw})
			call(b, w, "get_next_action", map[string]any{"session_token": tw, "wait_seconds": 1})
			call(b, a, "get_next_action", map[string]any{"session_token": ta, "wait_seconds": 1})
		}
		report(b, lat)
	})
	b.Run("change=task", func(b *testing.B) {
		task := p.taskInProgress("reviewer", "bench")
		tt := p.authenticate(w, "reviewer", "task")
		var lat []time.Duration
		for b.Loop() {
			if _, err := p.store.UpdateTask(ctx, p.cfg, task.ID, "reviewer", fsstore.TaskChange{Status: fsstore.StatusTodo}); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, sample(b, w, tt, func() {
				if _, err := p.store.UpdateTask(ctx, p.cfg, task.ID, "lead", fsstore.TaskChange{Status: fsstore.StatusInProgress}); err != nil {
					b.Fatal(err)
				}
			}, "work"))
		}
		report(b, lat)
	})
}
