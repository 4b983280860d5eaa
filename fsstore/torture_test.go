package fsstore

import (
	"aipm/fsstore/internal/storage"
	"aipm/internal/helperproc"
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func init() {
	helperRoles["torture-send"] = func(h *helperProc) error { return helperTortureSend(h, false) }
	helperRoles["torture-send-full"] = func(h *helperProc) error { return helperTortureSend(h, true) }
}

// helperTortureSend sends n messages alice -> bob, printing "acked ID" for
// each send that returned; with full, under a file-size limit a little
// above bob's chat log (a filling disk), printing "full" for each refusal.
func helperTortureSend(h *helperProc, full bool) error {
	if full {
		signal.Ignore(syscall.SIGXFSZ)
		chat, _ := h.store.files.ChatPath(h.arg)
		var size int64 // none yet: the writers before were killed before they sent
		if fi, err := os.Stat(chat); err == nil {
			size = fi.Size()
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		lim := uint64(size) + 2000
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: lim, Max: lim}); err != nil {
			return err
		}
	}
	cfg, err := h.store.files.LoadConfig()
	if err != nil {
		return err
	}
	for i := 0; i < h.n; i++ {
		m, err := h.store.Send(h.ctx, cfg, OutgoingMessage{From: "alice", To: h.arg, Content: fmt.Sprintf("%s %d", h.name, i)})
		var ce *storage.CodeError
		switch {
		case err == nil:
			fmt.Fprintln(h.out, "acked", m.ID)
		case errors.As(err, &ce) && ce.Code == storage.CodeSentPartly: // delivered; the sender's copy did not fit
			fmt.Fprintln(h.out, "acked", m.ID)
			fmt.Fprintln(h.out, "partly")
		case storage.IsDiskFull(err):
			fmt.Fprintln(h.out, "full")
		default:
			return err
		}
		h.out.Flush()
	}
	return nil
}

// tortureCounts is what TestTorture counted.
type tortureCounts struct {
	mu                                         sync.Mutex
	acked                                      map[string]bool
	read                                       map[string][]bool // id -> redelivered flag of each delivery
	full, partly, killedWriters, killedReaders int
	junkLines                                  int
}

// runKillable runs a helper, SIGKILLs it after up to maxDelay when kill,
// and hands each whole line it printed to line.
func runKillable(t *testing.T, cmd *exec.Cmd, kill bool, maxDelay time.Duration, line func(string)) bool {
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Error(err)
		return false
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := bufio.NewReader(stdout)
		for {
			b, err := r.ReadString('\n')
			if err != nil {
				return // a line cut by the kill was not acknowledged
			}
			line(strings.TrimSuffix(b, "\n"))
		}
	}()
	if kill {
		time.Sleep(time.Duration(rand.Int64N(int64(maxDelay))))
		cmd.Process.Signal(syscall.SIGKILL)
	}
	<-done
	err := cmd.Wait()
	if !kill && err != nil {
		t.Errorf("%s: %v", cmd.Env[len(cmd.Env)-1], err)
	}
	return kill && err != nil
}

// TestTorture is the attack suite's multi-process torture test
// (docs/operations.md): writers sending through the store in helper
// processes (one in three under a filling disk), one reader at a time
// taking batches, an editor appending junk lines to the chat log, and
// SIGKILLs of writers and readers at random instants. No acknowledged
// send may be lost, and every repeat must be marked redelivered.
// -torture.long runs it for minutes.
func TestTorture(t *testing.T) {
	rounds, perRound := 4, 40
	if *tortureLong {
		rounds, perRound = 250, 60
	}
	s := newTestStore(t)
	ctx := context.Background()
	for _, a := range []NewAgent{{ID: "alice", Type: storage.AgentHuman}, {ID: "bob", Type: storage.AgentAI}} {
		if _, err := s.AddAgent(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	c := &tortureCounts{acked: map[string]bool{}, read: map[string][]bool{}}
	var writers sync.WaitGroup
	for w := 0; w < 2; w++ {
		writers.Add(1)
		go func() {
			defer writers.Done()
			tortureWriter(t, s, c, rounds, perRound)
		}()
	}
	writing := make(chan struct{})
	go func() { writers.Wait(); close(writing) }()
	go tortureEditor(t, s, c, writing)
	session := 0
	for stop := false; !stop; session++ {
		select {
		case <-writing:
			os.WriteFile(filepath.Join(s.files.ProjectDir(), "stop"), nil, 0o644)
			stop = true
		default:
		}
		c.readerRun(t, s, session, !stop)
	}
	c.report(t)
}

func tortureWriter(t *testing.T, s *Store, c *tortureCounts, rounds, perRound int) {
	for r := 0; r < rounds; r++ {
		role := "torture-send"
		if r%3 == 2 {
			role = "torture-send-full"
		}
		kill := rand.IntN(2) == 0
		killed := runKillable(t, helperproc.Command(t, role, s.files.ProjectDir(), "bob", strconv.Itoa(perRound)), kill, 200*time.Millisecond, func(l string) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if id, ok := strings.CutPrefix(l, "acked "); ok {
				c.acked[id] = true
			} else if l == "full" {
				c.full++
			} else if l == "partly" {
				c.partly++
			}
		})
		if killed {
			c.mu.Lock()
			c.killedWriters++
			c.mu.Unlock()
		}
	}
}

// tortureEditor appends junk lines to bob's chat log, as a careless human
// might, until the writers are done.
func tortureEditor(t *testing.T, s *Store, c *tortureCounts, writing chan struct{}) {
	chat, _ := s.files.ChatPath("bob")
	for {
		select {
		case <-writing:
			return
		case <-time.After(20 * time.Millisecond):
		}
		f, err := os.OpenFile(chat, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			continue // not yet there
		}
		f.WriteString("not json, a human's note\n")
		f.Close()
		c.mu.Lock()
		c.junkLines++
		c.mu.Unlock()
	}
}

// readerRun runs one chat session of bob that takes batches, killed at a
// random instant when kill.
func (c *tortureCounts) readerRun(t *testing.T, s *Store, session int, kill bool) {
	killed := runKillable(t, helperproc.Command(t, "deliver", s.files.ProjectDir(), "bob", strconv.Itoa(session)), kill, 100*time.Millisecond, func(l string) {
		id, flag, ok := strings.Cut(l, " ")
		if !ok || (flag != "true" && flag != "false") {
			return
		}
		c.mu.Lock()
		c.read[id] = append(c.read[id], flag == "true")
		c.mu.Unlock()
	})
	if killed {
		c.killedReaders++
	}
}

// report logs the table and fails on a lost send or an unmarked repeat.
func (c *tortureCounts) report(t *testing.T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lost, marked, unmarked := 0, 0, 0
	for id := range c.acked {
		if len(c.read[id]) == 0 {
			lost++
		}
	}
	for _, flags := range c.read {
		for _, f := range flags[1:] {
			if f {
				marked++
			} else {
				unmarked++
			}
		}
	}
	t.Logf("torture:\n%-28s %d\n%-28s %d\n%-28s %d\n%-28s %d\n%-28s %d\n%-28s %d\n%-28s %d\n%-28s %d\n%-28s %d\n%-28s %d",
		"acked sends", len(c.acked), "refused (disk full)", c.full, "sent partly (disk full)", c.partly, "delivered (distinct)", len(c.read),
		"lost (acked, never read)", lost, "repeats marked", marked, "repeats unmarked", unmarked,
		"writers killed", c.killedWriters, "readers killed", c.killedReaders, "junk lines appended", c.junkLines)
	if lost > 0 || unmarked > 0 {
		t.Errorf("%d acknowledged sends lost, %d repeats not marked redelivered", lost, unmarked)
	}
}
