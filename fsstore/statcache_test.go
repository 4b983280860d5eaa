package fsstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"
)

// What one process caches (a session, an unread count) follows what another
// process writes: each Store stands for one process with its own caches.
func TestCachesFollowOtherWriters(t *testing.T) {
	s, cfg := newConvStore(t)
	ctx := context.Background()
	other, err := Open(s.ProjectDir())
	if err != nil {
		t.Fatal(err)
	}
	ses, token, err := s.Authenticate(ctx, cfg, "b", mustPasskey(t, s, "b"), "", PurposeChat)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second call is served from the caches
		if _, err := s.CheckSession(ctx, token); err != nil {
			t.Fatal(err)
		}
		if n, count, err := s.Interrupt(ctx, ses); err != nil || n != nil || count != 0 {
			t.Fatalf("Interrupt = %v, %d, %v; want none", n, count, err)
		}
	}

	if _, err := other.Notify(ctx, "b", Notification{Message: "one"}); err != nil {
		t.Fatal(err)
	}
	if _, count, err := s.Interrupt(ctx, ses); err != nil || count != 1 {
		t.Fatalf("after another process's notification: %d unread, %v; want 1", count, err)
	}
	if _, err := other.Notify(ctx, "b", Notification{Type: NotifyInterrupt, Message: "stop"}); err != nil {
		t.Fatal(err)
	}
	if n, count, err := s.Interrupt(ctx, ses); err != nil || n == nil || count != 2 {
		t.Fatalf("after an interrupt: %v, %d unread, %v; want the interrupt and 2", n, count, err)
	}
	if _, _, err := other.SessionNotifications(ctx, ses, false, 0); err != nil {
		t.Fatal(err)
	}
	if err := other.Acknowledge(ctx, "b", ses.ID); err != nil {
		t.Fatal(err)
	}
	if n, count, err := s.Interrupt(ctx, ses); err != nil || n != nil || count != 0 {
		t.Fatalf("after another process read them: %v, %d unread, %v; want none", n, count, err)
	}

	if _, err := other.EndSession(ctx, ses.ID, "logout"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CheckSession(ctx, token); !errors.Is(err, ErrSessionEnded) {
		t.Fatalf("after another process ended the session: %v, want ErrSessionEnded", err)
	}
	path, _ := s.DocPath(Sessions, ses.ID)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CheckSession(ctx, token); !errors.Is(err, ErrBadToken) {
		t.Fatalf("after the session file was removed: %v, want ErrBadToken", err)
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
	path, _ := s.ChatPath("b")
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
	other, err := Open(s.ProjectDir())
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
	path, _ := s.ChatPath("b")
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
	other, err := Open(s.ProjectDir())
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
	defer func(n int64) { advanceAfter = n }(advanceAfter)
	advanceAfter = 2 << 10
	cursorOf := func() StreamCursor {
		t.Helper()
		path, _ := s.readCursorPath("b")
		cursors, err := s.readCursors(path)
		if err != nil {
			t.Fatal(err)
		}
		return streamCursor(cursors, StreamChat)
	}
	for range 40 { // about 6 KiB of own copies
		if _, err := s.Send(ctx, cfg, OutgoingMessage{From: "b", To: "a", Content: "mine"}); err != nil {
			t.Fatal(err)
		}
	}
	sent, err := s.Send(ctx, cfg, OutgoingMessage{From: "a", To: "b", Content: "for you"})
	if err != nil {
		t.Fatal(err)
	}
	if msgs, _, err := s.Unread(ctx, "b", 1, true); err != nil || len(msgs) != 1 || msgs[0].ID != sent.ID {
		t.Fatalf("peek: %v, %v", msgs, err)
	}
	cur := cursorOf()
	if cur.Offset < advanceAfter || cur.Pending != nil {
		t.Fatalf("cursor after the peek: %+v; want it past the own copies", cur)
	}
	other, err := Open(s.ProjectDir()) // another process: no memory, the cursor is enough
	if err != nil {
		t.Fatal(err)
	}
	if msgs, _, err := other.Unread(ctx, "b", 5, false); err != nil || len(msgs) != 1 || msgs[0].ID != sent.ID {
		t.Fatalf("read in another process: %v, %v; want the message once", msgs, err)
	}

	// A session's unacknowledged batch holds the committed cursor.
	for range 40 {
		if _, err := s.Send(ctx, cfg, OutgoingMessage{From: "b", To: "a", Content: "mine"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Send(ctx, cfg, OutgoingMessage{From: "a", To: "b", Content: "batch"}); err != nil {
		t.Fatal(err)
	}
	ses := Session{ID: NewID(PrefixSession), Agent: "b", Purpose: PurposeChat}
	if msgs, _, err := s.Deliver(ctx, ses, 1); err != nil || len(msgs) != 1 {
		t.Fatalf("deliver: %v, %v", msgs, err)
	}
	for range 40 {
		if _, err := s.Send(ctx, cfg, OutgoingMessage{From: "b", To: "a", Content: "mine"}); err != nil {
			t.Fatal(err)
		}
	}
	held := cursorOf()
	if _, _, err := other.Unread(ctx, "b", 1, true); err != nil {
		t.Fatal(err)
	}
	if got := cursorOf(); !equalStream(got, held) {
		t.Fatalf("a peek moved the cursor under a held batch: %+v, was %+v", got, held)
	}
}
