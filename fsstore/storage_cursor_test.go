package fsstore

import (
	"aipm/fsstore/internal/storage"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Writers and readers in separate processes on one file and one cursor:
// every record is returned exactly once.
func TestCursorConcurrentProcesses(t *testing.T) {
	const writers, lines, readers = 4, 1500, 3
	s := newTestStore(t)
	chat, _ := s.files.ChatPath("bob")
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[string]int{}
	var readCmds []func() error
	for r := 0; r < readers; r++ {
		cmd := helper(t, "read", s.files.ProjectDir(), "bob", "0")
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
		cmd := helper(t, "append", s.files.ProjectDir(), chat, strconv.Itoa(lines))
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
	os.WriteFile(filepath.Join(s.files.ProjectDir(), "stop"), nil, 0o644)
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

func writeIDs(t *testing.T, s *Store, path string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if err := s.files.AppendJSONL(context.Background(), path, map[string]string{"id": id, "senderId": "alice"}); err != nil {
			t.Fatal(err)
		}
	}
}

func readIDs(t *testing.T, s *Store, agent string, opt storage.ReadOptions) []string {
	t.Helper()
	res, err := s.files.ReadUnread(context.Background(), agent, storage.StreamChat, opt)
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
	s := newTestStore(t)
	chat, _ := s.files.ChatPath("bob")
	ids := []string{storage.NewID(storage.PrefixMessage), storage.NewID(storage.PrefixMessage), storage.NewID(storage.PrefixMessage), storage.NewID(storage.PrefixMessage)}
	writeIDs(t, s, chat, ids...)
	if got := readIDs(t, s, "bob", storage.ReadOptions{Limit: 2, Peek: true}); strings.Join(got, ",") != strings.Join(ids[:2], ",") {
		t.Fatalf("peek %v", got)
	}
	res, _ := s.files.ReadUnread(context.Background(), "bob", storage.StreamChat, storage.ReadOptions{Limit: 2})
	if len(res.Records) != 2 || !res.More || idOf(res.Records[0]) != ids[0] {
		t.Fatalf("first read: %d records, more=%v", len(res.Records), res.More)
	}
	skip := ids[2]
	got := readIDs(t, s, "bob", storage.ReadOptions{Match: func(r storage.Record) bool { return idOf(r) != skip }})
	if strings.Join(got, ",") != ids[3] {
		t.Fatalf("second read %v, want [%s]", got, ids[3])
	}
	if got := readIDs(t, s, "bob", storage.ReadOptions{}); len(got) != 0 {
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
	s := newTestStore(t)
	chat, _ := s.files.ChatPath("bob")
	var ids []string
	for i := 0; i < 6; i++ {
		ids = append(ids, storage.NewID(storage.PrefixMessage))
	}
	writeIDs(t, s, chat, ids...)
	if got := readIDs(t, s, "bob", storage.ReadOptions{Limit: 3}); len(got) != 3 {
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
			got := readIDs(t, s, "bob", storage.ReadOptions{})
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("after %s: read %v, want %v", tc.name, got, tc.want)
			}
		})
	}
	// Truncated below the cursor, the last id gone: only newer ids come back.
	newer := storage.NewID(storage.PrefixMessage)
	editorRewrite(t, chat, lines[0]+lines[1])
	writeIDs(t, s, chat, newer)
	if got := readIDs(t, s, "bob", storage.ReadOptions{}); strings.Join(got, ",") != newer {
		t.Fatalf("after truncation: read %v, want [%s]", got, newer)
	}
}

func TestUpdateDocConcurrent(t *testing.T) {
	s := newTestStore(t)
	path := filepath.Join(s.files.CollectionDir(storage.Tasks), "counter.json")
	type counter struct {
		N int `json:"n"`
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if _, err := storage.UpdateDoc(context.Background(), s.files, path, storage.ModeFile, func(c *counter, _ bool) error { c.N++; return nil }); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	var c counter
	if err := s.files.ReadDoc(path, &c); err != nil || c.N != 400 {
		t.Fatalf("counter = %d, err %v; want 400", c.N, err)
	}
	data, _ := os.ReadFile(path)
	if string(data) != "{\n  \"n\": 400\n}\n" {
		t.Errorf("document is %q, want indented JSON with a final newline", data)
	}
}

func TestModes(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	if _, err := s.AddAgent(ctx, NewAgent{ID: "bob", Type: storage.AgentAI}); err != nil {
		t.Fatal(err)
	}
	chat, _ := s.files.ChatPath("bob")
	writeIDs(t, s, chat, storage.NewID(storage.PrefixMessage))
	ses, _ := s.files.DocPath(storage.Sessions, storage.NewID(storage.PrefixSession))
	if err := s.files.WriteDoc(ses, map[string]string{}, storage.ModePrivateFile); err != nil {
		t.Fatal(err)
	}
	passkey, _ := s.files.PasskeyPath("bob")
	agentDir, _ := s.files.AgentDir("bob")
	for _, tc := range []struct {
		path string
		want os.FileMode
	}{
		{s.files.Root(), 0o755 | os.ModeDir},
		{s.files.ConfigPath(), 0o644},
		{agentDir, 0o755 | os.ModeDir},
		{chat, 0o644},
		{passkey, 0o600},
		{s.files.CollectionDir(storage.Sessions), 0o700 | os.ModeDir},
		{ses, 0o600},
	} {
		fi, err := os.Stat(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != tc.want {
			t.Errorf("%s: mode %v, want %v", s.files.Rel(tc.path), fi.Mode(), tc.want)
		}
	}
}

// A peek remembers how far it passed over records that were not for it (the
// agent's own sent copies) and starts there next time, from the same
// cursor; what arrives later is still found, and a moved cursor scans anew.
func TestPeekRemembersItsScan(t *testing.T) {
	s, cfg := newConvStore(t)
	ctx := context.Background()
	for range 3 {
		if _, err := s.Send(ctx, cfg, OutgoingMessage{From: "b", To: "a", Content: "mine"}); err != nil {
			t.Fatal(err)
		}
	}
	if msgs, _, err := s.Unread(ctx, "b", 1, true); err != nil || len(msgs) != 0 {
		t.Fatalf("peek over own copies: %v, %v; want nothing", msgs, err)
	}
	// Rewrite an already scanned line in place as if another agent sent it:
	// a peek that rescanned would find it, one that remembers does not.
	path, _ := s.files.ChatPath("b")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	var m map[string]any
	if err := json.Unmarshal(first, &m); err != nil {
		t.Fatal(err)
	}
	m["senderId"] = "h"
	delete(m, "receiverId")
	line, _ := json.Marshal(m)
	forged := append(append(line, '\n'), rest...)
	if err := os.WriteFile(path, forged, 0o644); err != nil {
		t.Fatal(err)
	}
	if msgs, _, err := s.Unread(ctx, "b", 1, true); err != nil || len(msgs) != 0 {
		t.Fatalf("second peek rescanned what the first passed over: %v, %v", msgs, err)
	}
	if _, err := s.Send(ctx, cfg, OutgoingMessage{From: "a", To: "b", Content: "for you"}); err != nil {
		t.Fatal(err)
	}
	if msgs, _, err := s.Unread(ctx, "b", 1, true); err != nil || len(msgs) != 1 || msgs[0].Content != "for you" {
		t.Fatalf("peek after a new message: %v, %v; want it", msgs, err)
	}
	// Another process has no memory of the scan: it finds the forged line.
	other, err := Open(s.files.ProjectDir())
	if err != nil {
		t.Fatal(err)
	}
	if msgs, _, err := other.Unread(ctx, "b", 1, true); err != nil || len(msgs) != 1 || msgs[0].SenderID != "h" {
		t.Fatalf("a fresh peek: %v, %v; want the rewritten line first", msgs, err)
	}
}

// A peek that found a record remembers the scan up to it: the next peek
// from the same cursor starts right before that record (and finds it
// again) instead of passing over the agent's own copies once more.
func TestPeekRemembersItsScanToAFind(t *testing.T) {
	s, cfg := newConvStore(t)
	ctx := context.Background()
	for range 3 {
		if _, err := s.Send(ctx, cfg, OutgoingMessage{From: "b", To: "a", Content: "mine"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Send(ctx, cfg, OutgoingMessage{From: "a", To: "b", Content: "for you"}); err != nil {
		t.Fatal(err)
	}
	if msgs, _, err := s.Unread(ctx, "b", 1, true); err != nil || len(msgs) != 1 || msgs[0].Content != "for you" {
		t.Fatalf("first peek: %v, %v", msgs, err)
	}
	// Forge the second own copy as if h sent it: a rescan would find it first.
	path, _ := s.files.ChatPath("b")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	var m map[string]any
	if err := json.Unmarshal(lines[1], &m); err != nil {
		t.Fatal(err)
	}
	m["senderId"] = "h"
	delete(m, "receiverId")
	forged, _ := json.Marshal(m)
	lines[1] = append(forged, '\n')
	if err := os.WriteFile(path, bytes.Join(lines, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	if msgs, _, err := s.Unread(ctx, "b", 1, true); err != nil || len(msgs) != 1 || msgs[0].Content != "for you" {
		t.Fatalf("second peek rescanned what the first passed over: %v, %v", msgs, err)
	}
	other, err := Open(s.files.ProjectDir())
	if err != nil {
		t.Fatal(err)
	}
	if msgs, _, err := other.Unread(ctx, "b", 1, true); err != nil || len(msgs) != 1 || msgs[0].SenderID != "h" {
		t.Fatalf("a fresh peek: %v, %v; want the forged line first", msgs, err)
	}
}

// A peek that passed over a lot of the agent's own copies moves the
// committed chat cursor past them (as a read would), so that the next
// process starts there; what is for the agent stays unread, and a session
// holding a batch keeps the cursor where it is.
func TestPeekAdvancesPastOwnCopies(t *testing.T) {
	s, cfg := newConvStore(t)
	ctx := context.Background()
	defer func(n int64) { storage.AdvanceAfter = n }(storage.AdvanceAfter)
	storage.AdvanceAfter = 2 << 10
	sendOwnCopies(t, s, cfg, 40) // about 6 KiB of own copies
	sent, err := s.Send(ctx, cfg, OutgoingMessage{From: "a", To: "b", Content: "for you"})
	if err != nil {
		t.Fatal(err)
	}
	if msgs, _, err := s.Unread(ctx, "b", 1, true); err != nil || len(msgs) != 1 || msgs[0].ID != sent.ID {
		t.Fatalf("peek: %v, %v", msgs, err)
	}
	cur := chatCursorOf(t, s, "b")
	if cur.Offset < storage.AdvanceAfter || cur.Pending != nil {
		t.Fatalf("cursor after the peek: %+v; want it past the own copies", cur)
	}
	other, err := Open(s.files.ProjectDir()) // another process: no memory, the cursor is enough
	if err != nil {
		t.Fatal(err)
	}
	if msgs, _, err := other.Unread(ctx, "b", 5, false); err != nil || len(msgs) != 1 || msgs[0].ID != sent.ID {
		t.Fatalf("read in another process: %v, %v; want the message once", msgs, err)
	}
	wantHeldBatchKeepsCursor(t, s, other, cfg)
}

// wantHeldBatchKeepsCursor: a session's unacknowledged batch holds b's
// committed cursor, however much of b's own copies other's peek passes over.
func wantHeldBatchKeepsCursor(t *testing.T, s, other *Store, cfg *storage.Config) {
	t.Helper()
	ctx := context.Background()
	sendOwnCopies(t, s, cfg, 40)
	if _, err := s.Send(ctx, cfg, OutgoingMessage{From: "a", To: "b", Content: "batch"}); err != nil {
		t.Fatal(err)
	}
	ses := Session{ID: storage.NewID(storage.PrefixSession), Agent: "b", Purpose: storage.PurposeChat}
	if msgs, _, err := s.Deliver(ctx, ses, 1); err != nil || len(msgs) != 1 {
		t.Fatalf("deliver: %v, %v", msgs, err)
	}
	sendOwnCopies(t, s, cfg, 40)
	held := chatCursorOf(t, s, "b")
	if _, _, err := other.Unread(ctx, "b", 1, true); err != nil {
		t.Fatal(err)
	}
	if got := chatCursorOf(t, s, "b"); !storage.EqualStream(got, held) {
		t.Fatalf("a peek moved the cursor under a held batch: %+v, was %+v", got, held)
	}
}

// sendOwnCopies has b send n messages to a: n own copies in b's chat log.
func sendOwnCopies(t *testing.T, s *Store, cfg *storage.Config, n int) {
	t.Helper()
	for range n {
		if _, err := s.Send(context.Background(), cfg, OutgoingMessage{From: "b", To: "a", Content: "mine"}); err != nil {
			t.Fatal(err)
		}
	}
}

// chatCursorOf is agent's committed chat cursor.
func chatCursorOf(t *testing.T, s *Store, agent string) storage.StreamCursor {
	t.Helper()
	path, _ := s.files.ReadCursorPath(agent)
	cursors, err := s.files.ReadCursors(path)
	if err != nil {
		t.Fatal(err)
	}
	return storage.CursorOf(cursors, storage.StreamChat)
}

// A damaged read.json is reported, never read as "nothing unread":
// authenticate says so instead of nothing_to_do, and reading fails with the
// path and what to do.
func TestDamagedReadCursors(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	keys := map[string]string{}
	for _, a := range []NewAgent{{ID: "alice", Type: storage.AgentHuman}, {ID: "bob", Type: storage.AgentAI}} {
		key, err := s.AddAgent(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		keys[a.ID] = key
	}
	cfg, _ := s.files.LoadConfig()
	if _, err := s.Send(ctx, cfg, OutgoingMessage{From: "alice", To: "bob", Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	path, _ := s.files.ReadCursorPath("bob")
	if err := os.WriteFile(path, []byte("{\"chat\": {\"offset\": \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.Authenticate(ctx, cfg, "bob", keys["bob"], "", "")
	if err == nil || errors.Is(err, ErrNothingToDo) || !strings.Contains(err.Error(), "read.json:") || !strings.Contains(err.Error(), "aipm doctor") {
		t.Fatalf("authenticate with a damaged read.json: %v", err)
	}
	ses := Session{ID: storage.NewID(storage.PrefixSession), Agent: "bob", Purpose: storage.PurposeChat}
	if _, _, err := s.Deliver(ctx, ses, 10); err == nil || !strings.Contains(err.Error(), "read.json:") {
		t.Fatalf("Deliver with a damaged read.json: %v", err)
	}
}
