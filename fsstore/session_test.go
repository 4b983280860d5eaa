package fsstore

import (
	"aipm/fsstore/internal/storage"
	"aipm/internal/lockedfile"
	"context"
	"errors"
	"os/exec"
	"testing"
)

func mustPasskey(t *testing.T, s *Store, agent string) string {
	t.Helper()
	key, err := s.newPasskey(agent)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// authenticate's purpose: a purpose with a live session is skipped, a
// requested purpose is honoured (replacing the live one), and a session
// whose aipm serve process is gone is ended, with its conversations.
func TestAuthenticatePurpose(t *testing.T) {
	s, cfg := newConvStore(t)
	ctx := context.Background()
	key := mustPasskey(t, s, "b")
	if _, err := s.CreateTask(ctx, cfg, NewTask{Title: "work", Assignee: "b", Status: StatusInProgress}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, cfg, OutgoingMessage{From: "h", To: "b", Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	purpose := func(requested string) (Session, error) {
		ses, _, err := s.Authenticate(ctx, cfg, "b", key, "", requested)
		return ses, err
	}
	chat := wantPurposesInTurn(t, s, purpose)
	wantDeadSessionEnded(t, s, cfg, chat, purpose)
	wantChatForConversationWork(t, s, cfg)
}

// wantPurposesInTurn authenticates b (who has a task in progress and an
// unread message) through purpose: the task first, then chat, then
// nothing; a requested task replaces the live task session. It returns
// the chat session.
func wantPurposesInTurn(t *testing.T, s *Store, purpose func(requested string) (Session, error)) Session {
	t.Helper()
	task, err := purpose("")
	if err != nil || task.Purpose != storage.PurposeTask {
		t.Fatalf("first: %+v %v", task, err)
	}
	chat, err := purpose("")
	if err != nil || chat.Purpose != storage.PurposeChat {
		t.Fatalf("second, with a live task session: %+v %v", chat, err)
	}
	if _, err := purpose(""); !errors.Is(err, ErrNothingToDo) {
		t.Fatalf("third, both purposes live: %v", err)
	}
	again, err := purpose(storage.PurposeTask)
	if err != nil || again.Purpose != storage.PurposeTask {
		t.Fatalf("requested task: %+v %v", again, err)
	}
	if old, _ := s.session(task.ID); old.EndReason != endReplaced {
		t.Fatalf("replaced session: %+v", old)
	}
	return chat
}

// wantDeadSessionEnded makes b's chat session belong to a process that has
// exited: authenticating through purpose then ends it, and the
// conversation it had, and gives chat again.
func wantDeadSessionEnded(t *testing.T, s *Store, cfg *storage.Config, chat Session, purpose func(requested string) (Session, error)) {
	t.Helper()
	ctx := context.Background()
	cnv, _, err := s.Conversations().Start(ctx, cfg, NewConversation{From: "b", To: "a"})
	if err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	path, _ := s.files.DocPath(storage.Sessions, chat.ID)
	if _, err := storage.UpdateDoc(ctx, s.files, path, storage.ModePrivateFile, func(ses *Session, _ bool) error { ses.PID = dead.Process.Pid; return nil }); err != nil {
		t.Fatal(err)
	}
	ses, err := purpose("")
	if err != nil || ses.Purpose != storage.PurposeChat {
		t.Fatalf("after the chat session's process died: %+v %v", ses, err)
	}
	c, err := s.conversation(ctx, cfg, cnv.ID)
	if err != nil || c.State != ConvTerminating || c.EndReason != ReasonSessionExpired || !c.owesNews("a") || c.owesNews("b") {
		t.Fatalf("conversation of the dead session: %+v %v", c, err)
	}
}

// wantChatForConversationWork: an agent whose only work is a conversation
// (the news of its end, or a request) is given a chat session.
func wantChatForConversationWork(t *testing.T, s *Store, cfg *storage.Config) {
	t.Helper()
	ctx := context.Background()
	// a has nothing but the news of that end: a chat session is its work.
	if ses, _, err := s.Authenticate(ctx, cfg, "a", mustPasskey(t, s, "a"), "", ""); err != nil || ses.Purpose != storage.PurposeChat {
		t.Fatalf("agent with a conversation end to hear: %+v %v", ses, err)
	}
	// c has nothing but a conversation request.
	if _, _, err := s.Conversations().Start(ctx, cfg, NewConversation{From: "a", To: "c"}); err != nil {
		t.Fatal(err)
	}
	if ses, _, err := s.Authenticate(ctx, cfg, "c", mustPasskey(t, s, "c"), "", ""); err != nil || ses.Purpose != storage.PurposeChat {
		t.Fatalf("agent with a conversation request: %+v %v", ses, err)
	}
}

// A session that ended leaves nothing in this process's caches: a server
// that saw many sessions keeps what its live ones need, not one copy of
// each session document and of its unread counts for every session ever.
func TestEndedSessionCachesNothing(t *testing.T) {
	s, cfg := newConvStore(t)
	ctx := context.Background()
	ses, token, err := s.Authenticate(ctx, cfg, "b", mustPasskey(t, s, "b"), "", storage.PurposeChat)
	if err != nil {
		t.Fatal(err)
	}
	path, _ := s.files.DocPath(storage.Sessions, ses.ID)
	kept := func() (session, unread bool) {
		t.Helper()
		stamp, err := lockedfile.StampPath(path)
		if err != nil {
			t.Fatal(err)
		}
		_, session = s.caches.sessions.Get(path, stamp)
		if stamps, ok := s.unreadStamps(ses.Agent); ok {
			_, unread = s.caches.unread.Get(unreadKey(ses, ses.Surfaced.Notifications), stamps...)
		}
		return session, unread
	}
	if ses, err = s.CheckSession(ctx, token); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Interrupt(ctx, ses); err != nil {
		t.Fatal(err)
	}
	if session, unread := kept(); (!session || !unread) && keepsAnything(t, path) {
		t.Fatalf("a live session: its document kept %v, its counts kept %v; want both", session, unread)
	}
	if _, err := s.EndSession(ctx, ses.ID, EndLogout); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CheckSession(ctx, token); err == nil {
		t.Fatal("the ended session still checks")
	}
	ended, err := s.Session(ses.ID) // as a call's notification line reads it, after its logout
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Interrupt(ctx, ended); err != nil {
		t.Fatal(err)
	}
	if session, unread := kept(); session || unread {
		t.Errorf("an ended session: its document kept %v, its counts kept %v; want neither", session, unread)
	}
}

// A live session's counts are kept for each mark its calls count from
// (before and after what a call told it): one would push out the other,
// and a pile of unread notifications would be read again at every call
// (aipm-bench's P6b).
func TestUnreadKeptAtEachMark(t *testing.T) {
	s, cfg := newConvStore(t)
	ctx := context.Background()
	ses, _, err := s.Authenticate(ctx, cfg, "b", mustPasskey(t, s, "b"), "", storage.PurposeChat)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Notify(ctx, "b", Notification{Message: "one"}); err != nil {
		t.Fatal(err)
	}
	told := ses
	told.Surfaced.Notifications = storage.Mark{Inode: 1, Offset: 1}
	for _, at := range []Session{ses, told} {
		if _, err := s.Interrupt(ctx, at); err != nil {
			t.Fatal(err)
		}
	}
	stamps, ok := s.unreadStamps("b")
	if !ok {
		t.Fatal("the notification files cannot be stamped")
	}
	notifications, _ := s.files.NotificationsPath("b")
	for _, at := range []Session{ses, told} {
		if _, kept := s.caches.unread.Get(unreadKey(at, at.Surfaced.Notifications), stamps...); !kept && keepsAnything(t, notifications) {
			t.Errorf("the counts from mark %+v are not kept", at.Surfaced.Notifications)
		}
	}
}

// keepsAnything says whether this process's stat caches keep what is put
// in them for the file at path: once a file's time could not be moved
// later (lockedfile's later, in an earlier test of the package), none
// does, for the rest of the process, and what a test finds not kept
// proves nothing.
func keepsAnything(t *testing.T, path string) bool {
	t.Helper()
	stamp, err := lockedfile.StampPath(path)
	if err != nil {
		t.Fatal(err)
	}
	var probe lockedfile.StatCache[bool]
	probe.Put("probe", true, stamp)
	_, kept := probe.Get("probe", stamp)
	if !kept {
		t.Log("this process's caches keep nothing (a file's time could not be moved later in an earlier test): what is kept is not checked")
	}
	return kept
}
