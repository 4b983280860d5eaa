package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"testing"
)

// aipm status counts what no session has read: a notification read by a
// session it is for (handed in a batch, acknowledged by the next call) no
// longer counts; one about a task counts until a task session reads it,
// whatever the chat session does.
func TestUnreadCountsFollowTheSessions(t *testing.T) {
	s, cfg := testStoreWith(t)
	ctx := context.Background()
	task, err := s.CreateTask(ctx, cfg, NewTask{Title: "fix", Assignee: "coder", Status: StatusInProgress, Requester: "lead"})
	if err != nil {
		t.Fatal(err)
	}
	counts := func(want int, when string) {
		t.Helper()
		if _, n, err := s.UnreadCounts(ctx, "coder"); err != nil || n != want {
			t.Fatalf("%s: %d unread notifications (%v), want %d", when, n, err, want)
		}
	}
	read := func(ses Session) {
		t.Helper()
		if _, _, err := s.SessionNotifications(ctx, ses, false, 0); err != nil {
			t.Fatal(err)
		}
		if err := s.files.Acknowledge(ctx, ses.Agent, ses.ID); err != nil {
			t.Fatal(err)
		}
	}
	counts(0, "a new agent")
	if _, err := s.Notify(ctx, "coder", Notification{From: "lead", Message: "the build is green"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Notify(ctx, "coder", Notification{From: "lead", TaskID: task.ID, Message: "see the new spec"}); err != nil {
		t.Fatal(err)
	}
	counts(2, "two written")

	chat, _, err := s.Authenticate(ctx, cfg, "coder", mustPasskey(t, s, "coder"), "", storage.PurposeChat)
	if err != nil {
		t.Fatal(err)
	}
	read(chat)
	counts(1, "the chat session read the first and may not read the second")

	ses, _, err := s.Authenticate(ctx, cfg, "coder", mustPasskey(t, s, "coder"), "", storage.PurposeTask)
	if err != nil {
		t.Fatal(err)
	}
	read(ses)
	counts(0, "the task session read the second")
}
