package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"testing"
)

// The rule's order (DESIGN section 8): a conversation end I was not told
// of, then a conversation request, then unread messages, then
// notifications, then wait.
func TestWorkOrder(t *testing.T) {
	s, cfg := newConvStore(t)
	ctx := context.Background()
	ses, _, err := s.Authenticate(ctx, cfg, "b", mustPasskey(t, s, "b"), "", storage.PurposeChat)
	if err != nil {
		t.Fatal(err)
	}
	req, other := workOrderPriorities(t, s, cfg, &ses)
	// NextAction takes what it reports: told once, then the request (now active).
	wantNextActions(t, s, cfg, ses, []nextStep{
		{ActConversationEnded, other.ID, ConvTerminating},
		{ActConversationRequest, req.ID, ConvActive},
		{ActGetPendingMessages, "", ""},
	})
	// A session that ended is told to exit before anything else.
	if _, err := s.EndSession(ctx, ses.ID, EndLogout); err != nil {
		t.Fatal(err)
	}
	if n := wantWork(t, s, cfg, &ses, ActExit); n.Reason != EndLogout {
		t.Fatalf("%+v", n)
	}
	// Its logout ended the conversation it had taken, with session_expired.
	if c, err := s.conversation(ctx, cfg, req.ID); err != nil || c.State != ConvTerminating || c.EndReason != ReasonSessionExpired || c.owesNews("b") || !c.owesNews("a") {
		t.Fatalf("conversation after b's logout: %+v %v", c, err)
	}
}

// wantWork checks that Work for b's chat session ses says action.
func wantWork(t *testing.T, s *Store, cfg *storage.Config, ses *Session, action string) Next {
	t.Helper()
	n, err := s.Work(context.Background(), cfg, "b", storage.PurposeChat, ses)
	if err != nil || n.Action != action {
		t.Fatalf("Work = %+v, %v; want %s", n, err, action)
	}
	return n
}

// workOrderPriorities gives b's chat session each kind of work, from the
// least urgent up, checking that Work reports the most urgent each time.
// It returns the conversation a requested of b and the one b started and
// c ended.
func workOrderPriorities(t *testing.T, s *Store, cfg *storage.Config, ses *Session) (req, other Conversation) {
	t.Helper()
	ctx := context.Background()
	wantWork(t, s, cfg, ses, ActWait)
	s.Notify(ctx, "b", Notification{Message: "hello"})
	s.Notify(ctx, "b", Notification{Message: "about a task", TaskID: "tsk_01M7YZWACRA0328GMTHNDHB18Z"})
	if n := wantWork(t, s, cfg, ses, ActGetNotifications); n.Notifications != 1 {
		t.Fatalf("a chat session counts only notifications about no task: %+v", n)
	}
	if _, err := s.Send(ctx, cfg, OutgoingMessage{From: "h", To: "b", Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	if n := wantWork(t, s, cfg, ses, ActGetPendingMessages); n.From != "h" {
		t.Fatalf("%+v", n)
	}
	req, _, err := s.Conversations().Start(ctx, cfg, NewConversation{From: "a", To: "b", Purpose: "talk"})
	if err != nil {
		t.Fatal(err)
	}
	if n := wantWork(t, s, cfg, ses, ActConversationRequest); n.Conversation.ID != req.ID {
		t.Fatalf("%+v", n)
	}
	other, _, err = s.Conversations().Start(ctx, cfg, NewConversation{From: "b", To: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Conversations().End(ctx, cfg, "c", other.ID); err != nil {
		t.Fatal(err)
	}
	if n := wantWork(t, s, cfg, ses, ActConversationEnded); n.Conversation.ID != other.ID || n.Conversation.EndReason != ReasonParticipantEnded {
		t.Fatalf("%+v", n)
	}
	return req, other
}

// nextStep is what one NextAction call should report: the action and, if
// id is set, the conversation and its state.
type nextStep struct{ action, id, state string }

// wantNextActions calls NextAction for ses once per step.
func wantNextActions(t *testing.T, s *Store, cfg *storage.Config, ses Session, steps []nextStep) {
	t.Helper()
	for _, step := range steps {
		n, err := s.NextAction(context.Background(), cfg, ses)
		if err != nil || n.Action != step.action || (step.id != "" && (n.Conversation.ID != step.id || n.Conversation.State != step.state)) {
			t.Fatalf("NextAction = %+v, %v; want %+v", n, err, step)
		}
	}
}
