package storage

import (
	"aipm/internal/helperproc"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/tidwall/gjson"
)

func TestAppendManyProcesses(t *testing.T) {
	const procs, lines = 8, 5000
	s := newTestFiles(t)
	path := filepath.Join(s.Root(), "agents", "a", "chat.jsonl")
	var wg sync.WaitGroup
	acked := make([][]string, procs)
	for p := 0; p < procs; p++ {
		cmd := helperproc.Command(t, "append", s.ProjectDir(), path, strconv.Itoa(lines))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			data, _ := io.ReadAll(stdout)
			acked[p] = strings.Fields(string(data))
			if err := cmd.Wait(); err != nil {
				t.Errorf("appender %d: %v", p, err)
			}
		}()
	}
	wg.Wait()
	recs, bad, tail, err := ReadAll(path)
	if err != nil || len(bad) > 0 || tail != 0 {
		t.Fatalf("ReadAll: err=%v bad=%v tail=%d", err, bad, tail)
	}
	seen := map[string]int{}
	lastSeq := map[string]int{}
	for _, r := range recs {
		var l testLine
		if err := json.Unmarshal(r.Data, &l); err != nil {
			t.Fatalf("line %d: %v", r.Line, err)
		}
		seen[l.ID]++
		// each writer's lines appear in its own order
		if prev, ok := lastSeq[l.Writer]; ok && l.Seq != prev+1 {
			t.Fatalf("writer %s: seq %d after %d", l.Writer, l.Seq, prev)
		}
		lastSeq[l.Writer] = l.Seq
	}
	if len(recs) != procs*lines {
		t.Errorf("file has %d lines, want %d", len(recs), procs*lines)
	}
	for p, ids := range acked {
		if len(ids) != lines {
			t.Errorf("appender %d acknowledged %d lines, want %d", p, len(ids), lines)
		}
		for _, id := range ids {
			if seen[id] != 1 {
				t.Fatalf("acknowledged id %s is in the file %d times", id, seen[id])
			}
		}
	}
}

func TestKilledWriterMidLine(t *testing.T) {
	s := newTestFiles(t)
	path := filepath.Join(s.Root(), "agents", "a", "chat.jsonl")
	cmd := helperproc.Command(t, "append-then-tear", s.ProjectDir(), path, "10")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "torn\n" {
		t.Fatalf("helper said %q", line)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	recs, bad, tail, err := ReadAll(path)
	if err != nil || len(bad) != 0 || len(recs) != 10 || tail == 0 {
		t.Fatalf("after kill: %d records, bad=%v, tail=%d, err=%v; want 10 records and a torn tail", len(recs), bad, tail, err)
	}
	// The next writer ends the fragment, so its own line stays whole.
	if err := s.AppendJSONL(context.Background(), path, testLine{ID: NewID(PrefixMessage), Writer: "next"}); err != nil {
		t.Fatal(err)
	}
	recs, bad, tail, err = ReadAll(path)
	if err != nil || len(recs) != 11 || len(bad) != 1 || bad[0].Line != 11 || tail != 0 {
		t.Fatalf("after next append: %d records, bad=%v, tail=%d, err=%v; want 11 records and line 11 reported", len(recs), bad, tail, err)
	}
	if !strings.HasPrefix(bad[0].Error(), path+":11: ") {
		t.Errorf("bad line reported as %q, want path:11: reason", bad[0])
	}
	if w := recs[10]; gjson.GetBytes(w.Data, "writer").String() != "next" {
		t.Errorf("last record %s", w.Data)
	}
}

// A writer killed at random instants: every append it acknowledged is in the
// file, and the file reads cleanly apart from at most one torn line.
func TestKilledWriterRandomInstants(t *testing.T) {
	s := newTestFiles(t)
	path := filepath.Join(s.Root(), "agents", "a", "chat.jsonl")
	var acked []string
	for round := 0; round < 5; round++ {
		cmd := helperproc.Command(t, "append", s.ProjectDir(), path, "100000")
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(stdout)
		for i := 0; i < 50+round*37; i++ { // let it get going, a different amount each round
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			acked = append(acked, strings.TrimSpace(line))
		}
		cmd.Process.Signal(syscall.SIGKILL)
		for { // what it acknowledged before dying still counts
			line, err := br.ReadString('\n')
			if err != nil {
				break
			}
			acked = append(acked, strings.TrimSpace(line))
		}
		cmd.Wait()
	}
	recs, bad, _, err := ReadAll(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 5 {
		t.Errorf("%d invalid lines; at most one torn line per kill", len(bad))
	}
	present := map[string]bool{}
	for _, r := range recs {
		present[idOf(r)] = true
	}
	for _, id := range acked {
		if !present[id] {
			t.Fatalf("acknowledged %s is missing", id)
		}
	}
}

// An editor-style rename-replace while another process appends: every
// acknowledged append is in the file at the path afterwards. The "editor"
// copies under the file's lock, as aipm doctor --repair does.
func TestRenameReplaceDuringAppend(t *testing.T) {
	s := newTestFiles(t)
	path := filepath.Join(s.Root(), "agents", "a", "chat.jsonl")
	if err := s.AppendJSONL(context.Background(), path, testLine{ID: NewID(PrefixMessage)}); err != nil {
		t.Fatal(err)
	}
	cmd := helperproc.Command(t, "append", s.ProjectDir(), path, "3000")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan []string)
	go func() {
		data, _ := io.ReadAll(stdout)
		done <- strings.Fields(string(data))
	}()
	replaces := 0
	var acked []string
loop:
	for {
		select {
		case acked = <-done:
			break loop
		default:
		}
		fl := flock.New(path, flock.SetPermissions(0o644))
		if err := fl.Lock(); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteFileAtomic(path, data, 0o644, false); err != nil {
			t.Fatal(err)
		}
		fl.Unlock()
		replaces++
		time.Sleep(time.Millisecond) // an editor saving 1000 times a second
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	recs, bad, tail, err := ReadAll(path)
	if err != nil || len(bad) > 0 || tail != 0 {
		t.Fatalf("err=%v bad=%v tail=%d", err, bad, tail)
	}
	present := map[string]int{}
	for _, r := range recs {
		present[idOf(r)]++
	}
	for _, id := range acked {
		if present[id] != 1 {
			t.Fatalf("acknowledged %s is at the path %d times (replaced the file %d times)", id, present[id], replaces)
		}
	}
	if len(acked) != 3000 || replaces < 10 {
		t.Errorf("acked %d, replaced %d times: the test did not overlap", len(acked), replaces)
	}
	t.Logf("%d appends, %d replaces", len(acked), replaces)
}

func TestAppendRejectsNewline(t *testing.T) {
	s := newTestFiles(t)
	path := filepath.Join(s.Root(), "x.jsonl")
	if err := s.AppendLine(context.Background(), path, []byte("{}\n{}")); err == nil {
		t.Fatal("a line with a newline was appended")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("file created: %v", err)
	}
}

// An append cut short by a full disk (here a file size limit that lets a
// few bytes of the line through) is taken back: the file is as it was, and
// the error says disk full.
func TestShortAppendTakenBack(t *testing.T) {
	s := newTestFiles(t)
	path := filepath.Join(s.Root(), "agents", "a", "chat.jsonl")
	if err := s.AppendJSONL(context.Background(), path, testLine{ID: NewID(PrefixMessage)}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	out, err := helperproc.Command(t, "append-over-limit", s.ProjectDir(), path, "20").Output()
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	if !strings.HasPrefix(string(out), "true ") || !strings.Contains(string(out), "file too large") {
		t.Errorf("append over the limit: %s", out)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Errorf("a fragment was left:\n%q\nwant\n%q", after, before)
	}
}
