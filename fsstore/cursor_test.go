package fsstore

import (
	"aipm/fsstore/internal/storage"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

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
	const advanceAfter = 2 << 10
	s.setAdvanceAfter(advanceAfter)
	sendOwnCopies(t, s, cfg, 40) // about 6 KiB of own copies
	sent, err := s.Send(ctx, cfg, OutgoingMessage{From: "a", To: "b", Content: "for you"})
	if err != nil {
		t.Fatal(err)
	}
	if msgs, _, err := s.Unread(ctx, "b", 1, true); err != nil || len(msgs) != 1 || msgs[0].ID != sent.ID {
		t.Fatalf("peek: %v, %v", msgs, err)
	}
	cur := chatCursorOf(t, s, "b")
	if cur.Offset < advanceAfter || cur.Pending != nil {
		t.Fatalf("cursor after the peek: %+v; want it past the own copies", cur)
	}
	other, err := Open(s.files.ProjectDir()) // another process: no memory, the cursor is enough
	if err != nil {
		t.Fatal(err)
	}
	other.setAdvanceAfter(advanceAfter)
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
