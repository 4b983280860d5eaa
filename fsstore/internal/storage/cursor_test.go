package storage

import (
	"aipm/internal/helperproc"
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"aipm/internal/lockedfile"
)

// Writers and readers in separate processes on one file and one cursor:
// every record is returned exactly once.
func TestCursorConcurrentProcesses(t *testing.T) {
	const writers, lines, readers = 4, 1500, 3
	s := newTestFiles(t)
	chat, _ := s.ChatPath("bob")
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[string]int{}
	var readCmds []func() error
	for r := 0; r < readers; r++ {
		cmd := helperproc.Command(t, "read", s.ProjectDir(), "bob", "0")
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				mu.Lock()
				got[sc.Text()]++
				mu.Unlock()
			}
		}()
		readCmds = append(readCmds, cmd.Wait)
	}
	var written []string
	var wmu sync.Mutex
	var wwg sync.WaitGroup
	for w := 0; w < writers; w++ {
		cmd := helperproc.Command(t, "append", s.ProjectDir(), chat, strconv.Itoa(lines))
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wwg.Add(1)
		go func() {
			defer wwg.Done()
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				wmu.Lock()
				written = append(written, sc.Text())
				wmu.Unlock()
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("writer: %v", err)
			}
		}()
	}
	wwg.Wait()
	os.WriteFile(filepath.Join(s.ProjectDir(), "stop"), nil, 0o644)
	wg.Wait()
	for _, wait := range readCmds {
		if err := wait(); err != nil {
			t.Errorf("reader: %v", err)
		}
	}
	if len(written) != writers*lines {
		t.Fatalf("writers acknowledged %d lines, want %d", len(written), writers*lines)
	}
	for _, id := range written {
		if got[id] != 1 {
			t.Fatalf("record %s returned %d times", id, got[id])
		}
	}
	if len(got) != len(written) {
		t.Errorf("readers returned %d distinct records, want %d", len(got), len(written))
	}
}

func writeIDs(t *testing.T, s *Files, path string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if err := s.AppendJSONL(context.Background(), path, map[string]string{"id": id, "senderId": "alice"}); err != nil {
			t.Fatal(err)
		}
	}
}

func readIDs(t *testing.T, s *Files, agent string, opt ReadOptions) []string {
	t.Helper()
	res, err := s.ReadUnread(context.Background(), agent, StreamChat, opt)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range res.Records {
		ids = append(ids, idOf(r))
	}
	return ids
}

func TestCursorLimitPeekAndMatch(t *testing.T) {
	s := newTestFiles(t)
	chat, _ := s.ChatPath("bob")
	ids := []string{NewID(PrefixMessage), NewID(PrefixMessage), NewID(PrefixMessage), NewID(PrefixMessage)}
	writeIDs(t, s, chat, ids...)
	if got := readIDs(t, s, "bob", ReadOptions{ReadOptions: lockedfile.ReadOptions{Limit: 2}, Peek: true}); strings.Join(got, ",") != strings.Join(ids[:2], ",") {
		t.Fatalf("peek %v", got)
	}
	res, _ := s.ReadUnread(context.Background(), "bob", StreamChat, ReadOptions{ReadOptions: lockedfile.ReadOptions{Limit: 2}})
	if len(res.Records) != 2 || !res.More || idOf(res.Records[0]) != ids[0] {
		t.Fatalf("first read: %d records, more=%v", len(res.Records), res.More)
	}
	skip := ids[2]
	got := readIDs(t, s, "bob", ReadOptions{ReadOptions: lockedfile.ReadOptions{Match: func(r Record) bool { return idOf(r) != skip }}})
	if strings.Join(got, ",") != ids[3] {
		t.Fatalf("second read %v, want [%s]", got, ids[3])
	}
	if got := readIDs(t, s, "bob", ReadOptions{}); len(got) != 0 {
		t.Fatalf("third read %v, want nothing", got)
	}
}

// editorRewrite replaces path with content the way editors save: a new file
// renamed over the old one (a new inode).
func editorRewrite(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".editor"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestCursorSurvivesEditorReplace(t *testing.T) {
	s := newTestFiles(t)
	chat, _ := s.ChatPath("bob")
	var ids []string
	for i := 0; i < 6; i++ {
		ids = append(ids, NewID(PrefixMessage))
	}
	writeIDs(t, s, chat, ids...)
	if got := readIDs(t, s, "bob", ReadOptions{ReadOptions: lockedfile.ReadOptions{Limit: 3}}); len(got) != 3 {
		t.Fatalf("read %v", got)
	}
	data, _ := os.ReadFile(chat)
	lines := strings.SplitAfter(string(data), "\n")
	for _, tc := range []struct {
		name    string
		content string
		want    []string
	}{
		// a human added a note at the top: offsets moved, the last id is still there
		{"prepended", `{"id":"msg_note","senderId":"lead"}` + "\n" + strings.Join(lines, ""), ids[3:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			editorRewrite(t, chat, tc.content)
			got := readIDs(t, s, "bob", ReadOptions{})
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("after %s: read %v, want %v", tc.name, got, tc.want)
			}
		})
	}
	// Truncated below the cursor, the last id gone: only newer ids come back.
	newer := NewID(PrefixMessage)
	editorRewrite(t, chat, lines[0]+lines[1])
	writeIDs(t, s, chat, newer)
	if got := readIDs(t, s, "bob", ReadOptions{}); strings.Join(got, ",") != newer {
		t.Fatalf("after truncation: read %v, want [%s]", got, newer)
	}
}

func TestUpdateDocConcurrent(t *testing.T) {
	s := newTestFiles(t)
	path := filepath.Join(s.CollectionDir(Tasks), "counter.json")
	type counter struct {
		N int `json:"n"`
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if _, err := UpdateDoc(context.Background(), s, path, ModeFile, func(c *counter, _ bool) error { c.N++; return nil }); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	var c counter
	if err := s.ReadDoc(path, &c); err != nil || c.N != 400 {
		t.Fatalf("counter = %d, err %v; want 400", c.N, err)
	}
	data, _ := os.ReadFile(path)
	if string(data) != "{\n  \"n\": 400\n}\n" {
		t.Errorf("document is %q, want indented JSON with a final newline", data)
	}
}
