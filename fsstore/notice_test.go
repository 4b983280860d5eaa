package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// Which session sees, counts and consumes which notification.
func TestNotificationConcerns(t *testing.T) {
	written := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	task, other := storage.NewID(storage.PrefixTask), storage.NewID(storage.PrefixTask)
	before, after := written.Add(-time.Minute), written.Add(time.Minute)
	for _, tc := range []struct {
		name string
		n    Notification
		ses  Session
		want bool
	}{
		{"task interrupt, its task session", Notification{Type: storage.NotifyInterrupt, TaskID: task}, Session{Purpose: storage.PurposeTask, TaskID: task, CreatedAt: before}, true},
		{"task interrupt, a later task session of the same task", Notification{Type: storage.NotifyInterrupt, TaskID: task}, Session{Purpose: storage.PurposeTask, TaskID: task, CreatedAt: after}, true},
		{"task interrupt, another task's session", Notification{Type: storage.NotifyInterrupt, TaskID: task}, Session{Purpose: storage.PurposeTask, TaskID: other, CreatedAt: before}, false},
		{"task interrupt, the chat session", Notification{Type: storage.NotifyInterrupt, TaskID: task}, Session{Purpose: storage.PurposeChat, CreatedAt: before}, false},
		{"agent interrupt, a chat session live then", Notification{Type: storage.NotifyInterrupt}, Session{Purpose: storage.PurposeChat, CreatedAt: before}, true},
		{"agent interrupt, a task session live then", Notification{Type: storage.NotifyInterrupt}, Session{Purpose: storage.PurposeTask, TaskID: task, CreatedAt: before}, true},
		{"agent interrupt, a session started later", Notification{Type: storage.NotifyInterrupt}, Session{Purpose: storage.PurposeTask, TaskID: task, CreatedAt: after}, false},
		{"info about a task, the chat session (DESIGN section 6: the task session's alone)", Notification{Type: storage.NotifyInfo, TaskID: task}, Session{Purpose: storage.PurposeChat, CreatedAt: after}, false},
	} {
		tc.n.CreatedAt = written
		if got := tc.n.concerns(tc.ses); got != tc.want {
			t.Errorf("%s: Concerns = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// An interrupt written twice for the same status change (the CLI, then the
// watcher noticing the same edit) is one line.
func TestInterruptIdempotent(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	task := Task{ID: storage.NewID(storage.PrefixTask), Status: StatusBlocked, StatusChangedAt: time.Now()}
	for i := 0; i < 2; i++ {
		if _, err := s.Notify(ctx, "coder", Notification{Type: storage.NotifyInterrupt, TaskID: task.ID, Message: "stop", Key: interruptKey(task)}); err != nil {
			t.Fatal(err)
		}
	}
	path, _ := s.files.NotificationsPath("coder")
	if recs, _, _, _ := storage.ReadAll(path); len(recs) != 1 {
		t.Fatalf("%d interrupt lines for one status change, want 1", len(recs))
	}
	task.StatusChangedAt = task.StatusChangedAt.Add(time.Second) // a new change
	if _, err := s.Notify(ctx, "coder", Notification{Type: storage.NotifyInterrupt, TaskID: task.ID, Message: "stop", Key: interruptKey(task)}); err != nil {
		t.Fatal(err)
	}
	if recs, _, _, _ := storage.ReadAll(path); len(recs) != 2 {
		t.Fatalf("%d interrupt lines after a second change, want 2", len(recs))
	}
}

// `aipm interrupt AGENT` (no task) stops the sessions live when it was
// written, not one started later.
func TestAgentInterruptStopsOnlyLiveSessions(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	old := Session{ID: storage.NewID(storage.PrefixSession), Agent: "coder", Purpose: storage.PurposeChat, CreatedAt: time.Now().UTC()}
	if _, err := s.Notify(ctx, "coder", Notification{Type: storage.NotifyInterrupt, Message: "stop"}); err != nil {
		t.Fatal(err)
	}
	later := Session{ID: storage.NewID(storage.PrefixSession), Agent: "coder", Purpose: storage.PurposeTask, TaskID: storage.NewID(storage.PrefixTask), CreatedAt: time.Now().UTC()}
	if u, err := s.Interrupt(ctx, old); err != nil || u.Interrupt == nil {
		t.Fatalf("live session: interrupt %v, err %v", u.Interrupt, err)
	}
	if u, err := s.Interrupt(ctx, later); err != nil || u.Interrupt != nil || u.Count != 0 {
		t.Fatalf("later session: interrupt %v (%d unread), err %v; want none", u.Interrupt, u.Count, err)
	}
}

// What one process caches (a session, an unread count) follows what another
// process writes: each Store stands for one process with its own caches.
func TestCachesFollowOtherWriters(t *testing.T) {
	s, cfg := newConvStore(t)
	ctx := context.Background()
	other, err := Open(s.files.ProjectDir())
	if err != nil {
		t.Fatal(err)
	}
	ses, token, err := s.Authenticate(ctx, cfg, "b", mustPasskey(t, s, "b"), "", storage.PurposeChat)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second call is served from the caches
		if _, err := s.CheckSession(ctx, token); err != nil {
			t.Fatal(err)
		}
		if u, err := s.Interrupt(ctx, ses); err != nil || u.Interrupt != nil || u.Count != 0 {
			t.Fatalf("Interrupt = %v, %d, %v; want none", u.Interrupt, u.Count, err)
		}
	}
	wantUnreadFollowsOther(t, s, other, ses)
	wantSessionFollowsOther(t, s, other, ses, token)
}

// wantUnreadFollowsOther: s's unread count and interrupt for ses follow
// the notifications other writes and reads.
func wantUnreadFollowsOther(t *testing.T, s, other *Store, ses Session) {
	t.Helper()
	ctx := context.Background()
	if _, err := other.Notify(ctx, "b", Notification{Message: "one"}); err != nil {
		t.Fatal(err)
	}
	if u, err := s.Interrupt(ctx, ses); err != nil || u.Count != 1 {
		t.Fatalf("after another process's notification: %d unread, %v; want 1", u.Count, err)
	}
	if _, err := other.Notify(ctx, "b", Notification{Type: storage.NotifyInterrupt, Message: "stop"}); err != nil {
		t.Fatal(err)
	}
	if u, err := s.Interrupt(ctx, ses); err != nil || u.Interrupt == nil || u.Count != 2 {
		t.Fatalf("after an interrupt: %v, %d unread, %v; want the interrupt and 2", u.Interrupt, u.Count, err)
	}
	if _, _, err := other.SessionNotifications(ctx, ses, false, 0); err != nil {
		t.Fatal(err)
	}
	if err := other.files.Acknowledge(ctx, "b", ses.ID); err != nil {
		t.Fatal(err)
	}
	if u, err := s.Interrupt(ctx, ses); err != nil || u.Interrupt != nil || u.Count != 0 {
		t.Fatalf("after another process read them: %v, %d unread, %v; want none", u.Interrupt, u.Count, err)
	}
}

// wantSessionFollowsOther: s's check of the session ses (by its token)
// follows other ending it and the session file's removal.
func wantSessionFollowsOther(t *testing.T, s, other *Store, ses Session, token string) {
	t.Helper()
	ctx := context.Background()
	if _, err := other.EndSession(ctx, ses.ID, "logout"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CheckSession(ctx, token); !errors.Is(err, ErrSessionEnded) {
		t.Fatalf("after another process ended the session: %v, want ErrSessionEnded", err)
	}
	path, _ := s.files.DocPath(storage.Sessions, ses.ID)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CheckSession(ctx, token); !errors.Is(err, ErrBadToken) {
		t.Fatalf("after the session file was removed: %v, want ErrBadToken", err)
	}
}
