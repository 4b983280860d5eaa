package fsstore

import (
	"aipm/fsstore/internal/storage"
	"aipm/internal/helperproc"
	"bufio"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Readers killed with SIGKILL at random instants while messages arrive:
// afterwards every message has reached some reader at least once, and every
// repeat is marked redelivered (DESIGN section 14). AIPM_LONG=1 runs longer.
func TestDeliveryKilledReaders(t *testing.T) {
	messages, kills := 400, 25
	if os.Getenv("AIPM_LONG") != "" {
		messages, kills = 5000, 300
	}
	s := newTestStore(t)
	ctx := context.Background()
	chat, _ := s.files.ChatPath("bob")
	written := make(chan []string, 1)
	go func() {
		var ids []string
		for i := 0; i < messages; i++ {
			m := Message{ID: storage.NewID(storage.PrefixMessage), SenderID: "alice", Content: "m" + strconv.Itoa(i), CreatedAt: time.Now().UTC().Format(timeFormat)}
			if err := s.files.AppendJSONL(ctx, chat, m); err != nil {
				t.Error(err)
				break
			}
			ids = append(ids, m.ID)
		}
		written <- ids
	}()
	got := map[string][]bool{} // id -> redelivered flag of each time it was printed
	collect := func(out []byte) {
		for _, l := range strings.Split(string(out), "\n") {
			id, flag, ok := strings.Cut(l, " ")
			if !ok || (flag != "true" && flag != "false") {
				continue // a line cut by the kill was not received
			}
			got[id] = append(got[id], flag == "true")
		}
	}
	run := func(n int, kill bool) {
		cmd := helperproc.Command(t, "deliver", s.files.ProjectDir(), "bob", strconv.Itoa(n))
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
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
			time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
			cmd.Process.Signal(syscall.SIGKILL)
		}
		collect(<-done)
		err := cmd.Wait()
		if !kill && err != nil {
			t.Fatalf("last reader: %v", err)
		}
	}
	for k := 0; k < kills; k++ {
		run(k, true)
	}
	ids := <-written
	os.WriteFile(filepath.Join(s.files.ProjectDir(), "stop"), nil, 0o644)
	run(kills, false)
	repeats := 0
	for _, id := range ids {
		flags := got[id]
		if len(flags) == 0 {
			t.Fatalf("message %s never reached a reader", id)
		}
		for _, f := range flags[1:] {
			if !f {
				t.Fatalf("message %s reached readers %d times, a repeat not marked redelivered (%v)", id, len(flags), flags)
			}
			repeats++
		}
	}
	t.Logf("%d messages, %d killed readers, %d marked repeats", len(ids), kills, repeats)
}

// A full disk (a file-size limit): the send fails with disk_full and a
// sentence, leaves no fragment in either chat log, and the next send that
// fits goes through.
func TestSendFullDisk(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	for _, a := range []NewAgent{{ID: "alice", Type: storage.AgentHuman}, {ID: "bob", Type: storage.AgentAI}} {
		if _, err := s.AddAgent(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	cfg, _ := s.files.LoadConfig()
	for i := 0; i < 3; i++ {
		if _, err := s.Send(ctx, cfg, OutgoingMessage{From: "alice", To: "bob", Content: "hello " + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	bob, _ := s.files.ChatPath("bob")
	alice, _ := s.files.ChatPath("alice")
	before := map[string]int64{}
	for _, p := range []string{bob, alice} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		before[p] = fi.Size()
	}
	limit := max(before[bob], before[alice]) + 1000
	out, err := helperproc.Command(t, "send-full", s.files.ProjectDir(), "bob", strconv.FormatInt(limit, 10)).Output()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "disk_full: no room to write .ai-pm/agents/bob/chat.jsonl") || lines[1] != "sent" {
		t.Fatalf("sends under a full disk said:\n%s", out)
	}
	for _, p := range []string{bob, alice} {
		recs, bad, tail, err := storage.ReadAll(p)
		if err != nil || len(bad) > 0 || tail != 0 || len(recs) != 4 {
			t.Fatalf("%s after the full disk: %d lines, bad %v, torn tail %d, err %v; want the 4 sent, whole", p, len(recs), bad, tail, err)
		}
	}
}
