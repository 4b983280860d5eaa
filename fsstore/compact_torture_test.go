package fsstore

import (
	"aipm/fsstore/internal/storage"
	"aipm/internal/helperproc"
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
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
	cfg, err := h.store.files.LoadConfig()
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
	cfg, err := h.store.files.LoadConfig()
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

// loadRun is one compaction-under-load run: what was sent and delivered.
type loadRun struct {
	t         *testing.T
	dir       string
	mu        sync.Mutex
	sent      map[string]string // id -> receiver
	got       map[string][]bool // id -> redelivered flag of each delivery
	compacted atomic.Int64      // bytes the compactor dropped
	kills     atomic.Int64
}

func compactUnderLoad(t *testing.T, kill bool) {
	perSender := 150
	if os.Getenv("AIPM_LONG") != "" {
		perSender = 5000
	}
	senders, receivers := []string{"h1", "h2", "h3", "h4"}, []string{"r1", "r2", "r3"}
	s := loadProject(t, senders, receivers)
	run := &loadRun{t: t, dir: s.files.ProjectDir(), sent: map[string]string{}, got: map[string][]bool{}}
	compactor := run.startCompactor()
	var sending, reading sync.WaitGroup
	for _, from := range senders {
		run.startSender(&sending, from, receivers, perSender)
	}
	var done atomic.Bool
	for _, r := range receivers {
		reading.Add(1)
		go func() {
			defer reading.Done()
			run.readUntilDone(r, kill, &done)
		}()
	}
	sending.Wait()
	os.WriteFile(filepath.Join(s.files.ProjectDir(), "stop"), nil, 0o644)
	done.Store(true)
	reading.Wait()
	if err := compactor(); err != nil {
		t.Fatalf("compactor: %v", err)
	}
	if len(run.sent) != len(senders)*perSender {
		t.Fatalf("%d sends returned, want %d", len(run.sent), len(senders)*perSender)
	}
	repeats := run.check(kill)
	run.checkRetention(s, receivers)
	t.Logf("%d messages, 0 lost, %d marked repeats, %d readers killed, %d bytes compacted away", len(run.sent), repeats, run.kills.Load(), run.compacted.Load())
}

// loadProject is a project with human senders and AI receivers, and a
// retention of 10 chat and receipt lines.
func loadProject(t *testing.T, senders, receivers []string) *Store {
	s := newTestStore(t)
	for _, id := range append(slices.Clone(senders), receivers...) {
		typ := storage.AgentAI
		if slices.Contains(senders, id) {
			typ = storage.AgentHuman
		}
		if _, err := s.AddAgent(context.Background(), NewAgent{ID: id, Type: typ}); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(s.files.ConfigPath(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(f, "\n[retention]\nchat_lines = 10\nreceipt_lines = 10\n")
	f.Close()
	return s
}

// startCompactor starts the compacting process; the function returned
// waits for it (it ends at the stop file).
func (run *loadRun) startCompactor() func() error {
	cmd := helperproc.Command(run.t, "compact", run.dir, "-", "0")
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		run.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			n, _ := strconv.ParseInt(sc.Text(), 10, 64)
			run.compacted.Add(n)
		}
		close(done)
	}()
	return func() error { <-done; return cmd.Wait() }
}

// startSender starts a process sending n messages from `from`.
func (run *loadRun) startSender(wg *sync.WaitGroup, from string, receivers []string, n int) {
	cmd := helperproc.Command(run.t, "send-to", run.dir, from+":"+strings.Join(receivers, ","), strconv.Itoa(n))
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		run.t.Fatal(err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			id, r, _ := strings.Cut(sc.Text(), " ")
			run.mu.Lock()
			run.sent[id] = r
			run.mu.Unlock()
		}
		if err := cmd.Wait(); err != nil {
			run.t.Errorf("sender: %v", err)
		}
	}()
}

// readUntilDone runs chat sessions of agent r one after the other (each
// killed, with kill, until done), then one that reads everything left.
func (run *loadRun) readUntilDone(r string, kill bool, done *atomic.Bool) {
	for n := 0; ; n++ {
		last := done.Load() || !kill
		out, err := runReader(run.t, run.dir, r, n, !last)
		run.mu.Lock()
		for _, l := range strings.Split(string(out), "\n") {
			id, flag, ok := strings.Cut(l, " ")
			if ok && (flag == "true" || flag == "false") {
				run.got[id] = append(run.got[id], flag == "true")
			}
		}
		run.mu.Unlock()
		if last {
			if err != nil {
				run.t.Errorf("reader of %s: %v", r, err)
			}
			return
		}
		run.kills.Add(1)
	}
}

// check fails on a message lost, a repeat not marked, or (without kills)
// any repeat, and returns the marked repeats.
func (run *loadRun) check(kill bool) (repeats int) {
	t := run.t
	lost := 0
	for id := range run.sent {
		flags := run.got[id]
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
		t.Fatalf("%d of %d messages never reached their receiver", lost, len(run.sent))
	}
	if !kill && repeats > 0 {
		t.Fatalf("%d messages came twice with no reader killed", repeats)
	}
	if run.compacted.Load() == 0 {
		t.Fatal("the compactor never dropped anything: the test tested nothing")
	}
	return repeats
}

// checkRetention compacts once more, everything read: the receivers'
// logs hold the retention.
func (run *loadRun) checkRetention(s *Store, receivers []string) {
	t := run.t
	cfg, err := s.files.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Compact(context.Background(), cfg, CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, r := range receivers {
		path, _ := s.files.ChatPath(r)
		if n := len(logIDs(t, path)); n != 10 {
			t.Errorf("%s's chat holds %d lines after compaction with everything read, want 10", r, n)
		}
	}
}

// runReader runs one chat session n of agent (helperDeliver) and returns
// what it printed; with kill, it is SIGKILLed after a few milliseconds.
func runReader(t *testing.T, dir, agent string, n int, kill bool) ([]byte, error) {
	cmd := helperproc.Command(t, "deliver", dir, agent, strconv.Itoa(n))
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
