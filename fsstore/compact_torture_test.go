package fsstore

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func init() {
	helperRoles["send-to"] = helperSendTo
	helperRoles["compact"] = helperCompact
}

// helperSendTo sends n messages from the human before ":" in arg to the
// agents after it (comma-separated, at random), printing "id receiver"
// once each send returned.
func helperSendTo(h *helperProc) error {
	from, list, _ := strings.Cut(h.arg, ":")
	to := strings.Split(list, ",")
	cfg, err := h.store.LoadConfig()
	if err != nil {
		return err
	}
	for i := 0; i < h.n; i++ {
		r := to[rand.IntN(len(to))]
		m, err := h.store.Send(h.ctx, cfg, OutgoingMessage{From: from, To: r, Content: fmt.Sprintf("%s %d %s", from, i, strings.Repeat("x", rand.IntN(200)))})
		if err != nil {
			return err
		}
		fmt.Fprintln(h.out, m.ID, r)
		h.out.Flush()
	}
	return nil
}

// helperCompact compacts the project again and again (as aipm compact
// does) until the stop file exists, printing the bytes each run dropped.
func helperCompact(h *helperProc) error {
	stop := filepath.Join(h.dir, "stop")
	cfg, err := h.store.LoadConfig()
	if err != nil {
		return err
	}
	for {
		if _, err := os.Stat(stop); err == nil {
			return nil
		}
		res, err := h.store.Compact(h.ctx, cfg, CompactOptions{Wait: true})
		if err != nil {
			return err
		}
		var dropped int64
		for _, f := range res.Files {
			dropped += f.DroppedBytes
		}
		fmt.Fprintln(h.out, dropped)
		h.out.Flush()
		time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
	}
}

// Compaction under load: 4 processes sending, 3 reading (chat sessions of
// three agents, killed at random and restarted), 1 compacting again and
// again with a retention of 10 lines: every message whose send returned
// reaches its receiver, and a message that comes twice is marked
// redelivered; without kills none comes twice. AIPM_LONG=1 runs the long
// form (docs/operations.md).
func TestCompactUnderLoad(t *testing.T) {
	for _, kill := range []bool{false, true} {
		t.Run(fmt.Sprintf("kill=%v", kill), func(t *testing.T) { compactUnderLoad(t, kill) })
	}
}

func compactUnderLoad(t *testing.T, kill bool) {
	perSender := 150
	if os.Getenv("AIPM_LONG") != "" {
		perSender = 5000
	}
	senders, receivers := []string{"h1", "h2", "h3", "h4"}, []string{"r1", "r2", "r3"}
	s := newTestStore(t)
	ctx := context.Background()
	for _, id := range senders {
		if _, err := s.AddAgent(ctx, NewAgent{ID: id, Type: AgentHuman}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range receivers {
		if _, err := s.AddAgent(ctx, NewAgent{ID: id, Type: AgentAI}); err != nil {
			t.Fatal(err)
		}
	}
	f, _ := os.OpenFile(s.ConfigPath(), os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprint(f, "\n[retention]\nchat_lines = 10\nreceipt_lines = 10\n")
	f.Close()

	var compacted atomic.Int64
	compactor := helper(t, "compact", s.ProjectDir(), "-", "0")
	cout, _ := compactor.StdoutPipe()
	if err := compactor.Start(); err != nil {
		t.Fatal(err)
	}
	cdone := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(cout)
		for sc.Scan() {
			n, _ := strconv.ParseInt(sc.Text(), 10, 64)
			compacted.Add(n)
		}
		close(cdone)
	}()

	var mu sync.Mutex
	sent := map[string]string{} // id -> receiver
	got := map[string][]bool{}  // id -> redelivered flag of each delivery
	var sending sync.WaitGroup
	for _, from := range senders {
		cmd := helper(t, "send-to", s.ProjectDir(), from+":"+strings.Join(receivers, ","), strconv.Itoa(perSender))
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sending.Add(1)
		go func() {
			defer sending.Done()
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				id, r, _ := strings.Cut(sc.Text(), " ")
				mu.Lock()
				sent[id] = r
				mu.Unlock()
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("sender: %v", err)
			}
		}()
	}

	var done atomic.Bool
	var reading sync.WaitGroup
	kills := atomic.Int64{}
	for _, r := range receivers {
		reading.Add(1)
		go func() {
			defer reading.Done()
			for n := 0; ; n++ {
				last := done.Load() || !kill
				out, err := runReader(t, s.ProjectDir(), r, n, !last)
				mu.Lock()
				for _, l := range strings.Split(string(out), "\n") {
					id, flag, ok := strings.Cut(l, " ")
					if ok && (flag == "true" || flag == "false") {
						got[id] = append(got[id], flag == "true")
					}
				}
				mu.Unlock()
				if last {
					if err != nil {
						t.Errorf("reader of %s: %v", r, err)
					}
					return
				}
				kills.Add(1)
			}
		}()
	}
	sending.Wait()
	os.WriteFile(filepath.Join(s.ProjectDir(), "stop"), nil, 0o644)
	done.Store(true)
	reading.Wait()
	<-cdone
	if err := compactor.Wait(); err != nil {
		t.Fatalf("compactor: %v", err)
	}

	if len(sent) != len(senders)*perSender {
		t.Fatalf("%d sends returned, want %d", len(sent), len(senders)*perSender)
	}
	lost, repeats := 0, 0
	for id := range sent {
		flags := got[id]
		if len(flags) == 0 {
			lost++
			continue
		}
		for _, f := range flags[1:] {
			if !f {
				t.Fatalf("message %s delivered %d times, a repeat not marked redelivered (%v)", id, len(flags), flags)
			}
			repeats++
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d messages never reached their receiver", lost, len(sent))
	}
	if !kill && repeats > 0 {
		t.Fatalf("%d messages came twice with no reader killed", repeats)
	}
	if compacted.Load() == 0 {
		t.Fatal("the compactor never dropped anything: the test tested nothing")
	}
	// Everything read: one more compaction leaves the retention.
	cfg, err := s.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Compact(ctx, cfg, CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, r := range receivers {
		path, _ := s.ChatPath(r)
		if n := len(logIDs(t, path)); n != 10 {
			t.Errorf("%s's chat holds %d lines after compaction with everything read, want 10", r, n)
		}
	}
	t.Logf("%d messages, 0 lost, %d marked repeats, %d readers killed, %d bytes compacted away", len(sent), repeats, kills.Load(), compacted.Load())
}

// runReader runs one chat session n of agent (helperDeliver) and returns
// what it printed; with kill, it is SIGKILLed after a few milliseconds.
func runReader(t *testing.T, dir, agent string, n int, kill bool) ([]byte, error) {
	cmd := helper(t, "deliver", dir, agent, strconv.Itoa(n))
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan []byte)
	go func() {
		var buf []byte
		r := bufio.NewReader(stdout)
		for {
			b, err := r.ReadBytes('\n')
			buf = append(buf, b...)
			if err != nil {
				done <- buf
				return
			}
		}
	}()
	if kill {
		time.Sleep(time.Duration(5+rand.IntN(40)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
	}
	out := <-done
	err := cmd.Wait()
	if kill {
		err = nil
	}
	return out, err
}
