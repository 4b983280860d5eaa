package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"strings"
	"testing"
)

// A delegation goes to the agent's chat session once; if that session ends
// before reporting it, the next chat session takes it over, and the
// watcher's list (PendingDelegations) shows it again meanwhile.
func TestDelegationTakeOver(t *testing.T) {
	s, cfg := newConvStore(t)
	ctx := context.Background()
	task, err := s.CreateTask(ctx, cfg, NewTask{Title: "t", Assignee: "a", Requester: "h", Status: StatusInProgress})
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Delegations().Create(ctx, cfg, NewDelegation{Agent: "a", TaskID: task.ID, Target: "b", Purpose: "ask b"})
	if err != nil {
		t.Fatal(err)
	}
	wantPendingDelegations(t, s, 1)
	first := wantChatSessionTakesDelegation(t, s, cfg)
	wantPendingDelegations(t, s, 0)
	// The task session waits while it is open.
	taskSes := Session{ID: "ses_x", Agent: "a", Purpose: storage.PurposeTask, TaskID: task.ID}
	if n, err := s.taskWork(ctx, cfg, "a", &taskSes); err != nil || n.Action != ActWait || len(n.Delegations) != 1 {
		t.Fatalf("task session: %+v %v", n, err)
	}
	if _, err := s.EndSession(ctx, first.ID, EndLogout); err != nil {
		t.Fatal(err)
	}
	wantPendingDelegations(t, s, 1)
	wantDelegationTakenOver(t, s, cfg, first)
	// Only the owner reports it; then the task session works again.
	if _, err := s.Delegations().Complete(ctx, "b", d.ID, DlgCompleted, "x"); err == nil {
		t.Fatal("b closed a's delegation")
	}
	if _, err := s.Delegations().Complete(ctx, "a", d.ID, DlgFailed, "b did not answer"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.taskWork(ctx, cfg, "a", &taskSes); err != nil || n.Action != ActWork || n.Delegations[0].Status != DlgFailed {
		t.Fatalf("task session after the report: %+v %v", n, err)
	}
	wantPendingDelegations(t, s, 0)
}

// wantPendingDelegations checks the watcher's list of pending delegations
// has want of them.
func wantPendingDelegations(t *testing.T, s *Store, want int) {
	t.Helper()
	ds, err := s.pendingDelegations(context.Background())
	if err != nil || len(ds) != want {
		t.Fatalf("PendingDelegations = %v, %v; want %d", ds, err, want)
	}
}

// wantChatSessionTakesDelegation: a's pending delegation is chat work; the
// chat session a authenticates is given it, once. It returns that session.
func wantChatSessionTakesDelegation(t *testing.T, s *Store, cfg *storage.Config) Session {
	t.Helper()
	ctx := context.Background()
	// Without a session, a delegation is chat work: authenticate picks chat
	// (the task session is not live yet, so it comes first: request chat).
	if n, err := s.Work(ctx, cfg, "a", storage.PurposeChat, nil); err != nil || n.Action != ActProcessDelegation {
		t.Fatalf("Work without a session: %+v %v", n, err)
	}
	first, _, err := s.Authenticate(ctx, cfg, "a", mustPasskey(t, s, "a"), "", storage.PurposeChat)
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.NextAction(ctx, cfg, first)
	if err != nil || n.Action != ActProcessDelegation || n.Delegation.Status != DlgProcessing || n.Delegation.SessionID != first.ID {
		t.Fatalf("first chat session: %+v %v", n, err)
	}
	if n, _ := s.NextAction(ctx, cfg, first); n.Action == ActProcessDelegation {
		t.Fatalf("the same session was given its delegation twice")
	}
	return first
}

// wantDelegationTakenOver: after first ended, a's next chat session takes
// its delegation over, and the delegation's history says so.
func wantDelegationTakenOver(t *testing.T, s *Store, cfg *storage.Config, first Session) {
	t.Helper()
	ctx := context.Background()
	second, _, err := s.Authenticate(ctx, cfg, "a", mustPasskey(t, s, "a"), "", storage.PurposeChat)
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.NextAction(ctx, cfg, second)
	if err != nil || n.Action != ActProcessDelegation || n.Delegation.SessionID != second.ID {
		t.Fatalf("second chat session: %+v %v", n, err)
	}
	h := n.Delegation.History
	if last := h[len(h)-1]; last.State != DlgProcessing || !strings.Contains(last.Reason, "taken over from "+first.ID) {
		t.Fatalf("history: %+v", h)
	}
}

// A conversation started while a delegation to its participant is in
// progress takes the delegation's task, and the delegation lists it.
func TestConversationTakesDelegationTask(t *testing.T) {
	s, cfg := newConvStore(t)
	ctx := context.Background()
	task, _ := s.CreateTask(ctx, cfg, NewTask{Title: "t", Assignee: "a", Requester: "h", Status: StatusInProgress})
	d, err := s.Delegations().Create(ctx, cfg, NewDelegation{Agent: "a", TaskID: task.ID, Target: "b", Purpose: "ask b"})
	if err != nil {
		t.Fatal(err)
	}
	ses, _, err := s.Authenticate(ctx, cfg, "a", mustPasskey(t, s, "a"), "", storage.PurposeChat)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.NextAction(ctx, cfg, ses); err != nil {
		t.Fatal(err)
	}
	// A conversation with someone else is not the delegation's.
	other, _, err := s.Conversations().Start(ctx, cfg, NewConversation{From: "a", To: "c"})
	if err != nil || other.TaskID != "" {
		t.Fatalf("%+v %v", other, err)
	}
	c, _, err := s.Conversations().Start(ctx, cfg, NewConversation{From: "a", To: "b", Purpose: "ask"})
	if err != nil || c.TaskID != task.ID {
		t.Fatalf("%+v %v", c, err)
	}
	got, _ := s.delegation(d.ID)
	if len(got.Conversations) != 1 || got.Conversations[0] != c.ID {
		t.Fatalf("delegation lists %v", got.Conversations)
	}
	tc, err := s.Delegations().TaskConversations(ctx, cfg, task.ID)
	if err != nil || len(tc.Conversations) != 1 || len(tc.Delegations) != 1 {
		t.Fatalf("TaskConversations: %+v %v", tc, err)
	}
}

func TestDelegationTransitions(t *testing.T) {
	states := []string{DlgPending, DlgProcessing, DlgCompleted, DlgFailed}
	allowed := map[[2]string]bool{
		{DlgPending, DlgProcessing}: true, {DlgPending, DlgFailed}: true, {DlgProcessing, DlgCompleted}: true, {DlgProcessing, DlgFailed}: true,
	}
	for _, from := range states {
		for _, to := range states {
			d := Delegation{ID: "dlg_x", Status: from}
			err := d.move(to, "coder", d.CreatedAt)
			if (err == nil) != allowed[[2]string{from, to}] {
				t.Errorf("%s -> %s: %v", from, to, err)
			}
		}
	}
}

// pendingDelegations lists the delegations of the project that wait for a
// chat session, oldest first: pending ones, and processing ones whose chat
// session has ended (the next chat session of the agent takes them over).
// Each names the agent (Delegation.Agent) whose chat session must take it.
// The rule is waitsForChat, which Work's delegationWork applies per agent.
func (s *Store) pendingDelegations(ctx context.Context) ([]Delegation, error) {
	open, err := s.Delegations().List(DelegationFilter{Open: true})
	if err != nil {
		return nil, err
	}
	var out []Delegation
	for _, d := range open {
		if s.waitsForChat(d, "") {
			out = append(out, d)
		}
	}
	return out, nil
}
