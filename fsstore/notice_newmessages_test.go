package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"testing"
	"time"
)

// TestNewMessagesNotice: the new_message notice counts, by sender in order
// of arrival, the received messages a chat session was not told of; none
// for a task session; none past their time to live (they stay unread).
func TestNewMessagesNotice(t *testing.T) {
	s, _ := leadAndCoder(t)
	if _, err := s.AddAgent(context.Background(), NewAgent{ID: "ops", Type: storage.AgentHuman}); err != nil {
		t.Fatal(err)
	}
	cfg, err := s.files.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	send := func(from, content string) {
		t.Helper()
		if _, err := s.Send(ctx, cfg, OutgoingMessage{From: from, To: "coder", Content: content}); err != nil {
			t.Fatal(err)
		}
	}
	chat := Session{ID: "ses_c", Agent: "coder", Purpose: storage.PurposeChat}
	task := Session{ID: "ses_t", Agent: "coder", Purpose: storage.PurposeTask}
	send("lead", "one")
	send("ops", "two")
	send("lead", "three")
	if n, _ := s.NewMessagesFor(ctx, Session{ID: "ses_x", Agent: "lead", Purpose: storage.PurposeChat}); n.Count() != 0 {
		t.Errorf("lead, who received nothing: %q", n.Text())
	}
	for _, c := range []struct {
		ses  Session
		want string
	}{
		{chat, "2 new messages from lead, 1 from ops"},
		{task, ""},
	} {
		n, err := s.NewMessagesFor(ctx, c.ses)
		if err != nil || n.Text() != c.want {
			t.Errorf("%s session: %q (%v); want %q", c.ses.Purpose, n.Text(), err, c.want)
		}
	}
	n, _ := s.NewMessagesFor(ctx, chat)
	if n.Count() != 3 || len(n.Senders) != 2 || n.Senders[0] != (senderCount{"lead", 2}) || n.Senders[1] != (senderCount{"ops", 1}) {
		t.Errorf("senders %+v, count %d", n.Senders, n.Count())
	}

	// past its time to live a message is not announced, and stays unread
	ttl, err := storage.ParseConfig("config.toml", []byte("[notifications.ttl]\nnew_message = \"50ms\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	s.files.SetNotificationTTLs(ttl)
	time.Sleep(60 * time.Millisecond)
	send("ops", "four")
	if n, _ := s.NewMessagesFor(ctx, chat); n.Text() != "1 new message from ops" {
		t.Errorf("after the others expired: %q", n.Text())
	}
	if msgs, _, err := s.Unread(ctx, "coder", 0, true); err != nil || len(msgs) != 4 {
		t.Errorf("unread after expiry: %d (%v), want 4", len(msgs), err)
	}
}

// TestNewMessagesAcrossOwnSend: a chat session found with nothing new
// keeps that answer across its own sends (the sender's copy is no message
// for it), never across a message another process wrote to its log,
// before its send or after it.
func TestNewMessagesAcrossOwnSend(t *testing.T) {
	s, cfg := leadAndCoder(t)
	other, err := Open(s.files.ProjectDir()) // another process: its own caches and descriptors
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	send := func(st *Store, from, to string) {
		t.Helper()
		if _, err := st.Send(ctx, cfg, OutgoingMessage{From: from, To: to, Content: "hi"}); err != nil {
			t.Fatal(err)
		}
	}
	chat := Session{ID: "ses_c", Agent: "coder", Purpose: storage.PurposeChat}
	news := func(step, want string) {
		t.Helper()
		n, err := s.NewMessagesFor(ctx, chat)
		if err != nil || n.Text() != want {
			t.Fatalf("%s: %q (%v), want %q", step, n.Text(), err, want)
		}
		if n.Count() > 0 {
			chat.Surfaced.Chat = n.Through // told, as the notification line records it
		}
	}
	news("nothing sent", "")
	send(s, "coder", "lead")
	news("after a send", "")
	send(s, "coder", "lead")
	news("after another send", "")
	send(other, "lead", "coder")
	send(s, "coder", "lead")
	news("a message, then a send", "1 new message from lead")
	news("told", "")
	send(s, "coder", "lead")
	send(other, "lead", "coder")
	news("a send, then a message", "1 new message from lead")
}
