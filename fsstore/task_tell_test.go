package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// tellTeam is a store with two humans (lead, a manager, and ops), coder
// and reviewer (AI agents under lead) and bot (an AI agent without a
// parent).
func tellTeam(t *testing.T) (*Store, *storage.Config) {
	t.Helper()
	s := newTestStore(t)
	for _, a := range []NewAgent{
		{ID: "lead", Type: storage.AgentHuman, Role: storage.RoleManager},
		{ID: "ops", Type: storage.AgentHuman},
		{ID: "coder", Type: storage.AgentAI, Parent: "lead"},
		{ID: "reviewer", Type: storage.AgentAI, Parent: "lead"},
		{ID: "bot", Type: storage.AgentAI},
	} {
		if _, err := s.AddAgent(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := s.files.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	return s, cfg
}

// TestEndTells is the rule of who is told that a task ended, and by whom.
func TestEndTells(t *testing.T) {
	_, cfg := tellTeam(t)
	for _, tc := range []struct {
		name                       string
		requester, assignee, by    string
		to                         string
		want                       []string
		from                       string // the sender of the tells
		wantIn                     string // in the text
		result, summary, blockedBy string
	}{
		{name: "done by its assignee", requester: "lead", assignee: "coder", by: "coder", to: StatusDone, result: "success", summary: "parsed", want: []string{"lead"}, from: "coder", wantIn: `is done (coder reported success): parsed`},
		{name: "done by its requester", requester: "lead", assignee: "coder", by: "lead", to: StatusDone},
		{name: "an agent's request", requester: "reviewer", assignee: "coder", by: "coder", to: StatusDone, want: []string{"reviewer"}, from: "coder", wantIn: `is done (set by coder)`},
		{name: "no requester: the assignee's human", assignee: "coder", by: "coder", to: StatusDone, want: []string{"lead"}, from: "coder"},
		{name: "its own request: its human", requester: "coder", assignee: "coder", by: "coder", to: StatusDone, want: []string{"lead"}, from: "coder"},
		{name: "a requester no longer of the project", requester: "ghost", assignee: "coder", by: "coder", to: StatusDone, want: []string{"lead"}, from: "coder"},
		{name: "no human parent: every human", assignee: "bot", by: "bot", to: StatusDone, want: []string{"lead", "ops"}, from: "bot"},
		{name: "blocked by its assignee", requester: "lead", assignee: "coder", by: "coder", to: StatusBlocked, blockedBy: "no fixtures", want: []string{"lead"}, from: "coder", wantIn: `is blocked (set by coder): no fixtures`},
		{name: "cancelled by another human", requester: "lead", assignee: "coder", by: "ops", to: StatusCancelled, want: []string{"lead"}, from: "ops", wantIn: "is cancelled (set by ops)"},
		{name: "cancelled by a human, no requester", assignee: "coder", by: "ops", to: StatusCancelled},
		{name: "by a hand edit", requester: "lead", assignee: "coder", by: HandEdit, to: StatusDone, want: []string{"lead"}, from: storage.SystemSender, wantIn: "set by " + HandEdit},
		{name: "not an end", requester: "lead", assignee: "coder", by: "coder", to: StatusTodo},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := Task{ID: "tsk_01M7YZWACRA0328GMTHNDHB18Z", Title: "Write the parser", Status: StatusInProgress, Requester: tc.requester, Assignee: tc.assignee}
			after := before
			after.Status, after.Result, after.Summary, after.BlockedReason = tc.to, tc.result, tc.summary, tc.blockedBy
			tells := endTells(cfg, before, after, tc.by, time.Now())
			var to []string
			for _, tl := range tells {
				to = append(to, tl.To)
				if tl.From != tc.from || !strings.Contains(tl.Content, tc.wantIn) || !strings.HasPrefix(tl.Content, `Task tsk_01M7YZWACRA0328GMTHNDHB18Z "Write the parser" is `+tc.to) || !strings.HasPrefix(tl.MessageID, storage.PrefixMessage) {
					t.Errorf("tell %+v; want from %q, with %q", tl, tc.from, tc.wantIn)
				}
			}
			if !slices.Equal(to, tc.want) {
				t.Errorf("told %v, want %v", to, tc.want)
			}
		})
	}
	if got := endTells(cfg, Task{Status: StatusDone}, Task{Status: StatusDone, Requester: "lead", Assignee: "coder"}, "coder", time.Now()); got != nil {
		t.Errorf("a change that does not move the status told %v", got)
	}
}

// inboxOf is what agent received, read or not.
func inboxOf(t *testing.T, s *Store, agent string) []Message {
	t.Helper()
	msgs, err := s.Tail(agent, 100)
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(msgs, func(m Message) bool { return !m.ReceivedBy(agent) })
}

// TestTaskEndToldOnce: the report that ends a task tells its requester,
// from the agent, in both logs; a retried report, which changes nothing,
// tells nothing more, and the task keeps nothing owed.
func TestTaskEndToldOnce(t *testing.T) {
	s, cfg := tellTeam(t)
	ctx := context.Background()
	task, err := s.CreateTask(ctx, cfg, NewTask{Title: "Write the parser", Assignee: "coder", Requester: "lead", Status: StatusInProgress})
	if err != nil {
		t.Fatal(err)
	}
	report, err := ReportChange("success", "parsed everything")
	if err != nil {
		t.Fatal(err)
	}
	report.Owner = "coder"
	for range 2 {
		after, err := s.UpdateTask(ctx, cfg, task.ID, "coder", report)
		if err != nil || after.Status != StatusDone || len(after.Untold) != 0 {
			t.Fatalf("report: %+v, %v", after, err)
		}
	}
	got := inboxOf(t, s, "lead")
	if len(got) != 1 || got[0].SenderID != "coder" || got[0].Kind != KindSystem || got[0].RelatedTaskID != task.ID ||
		got[0].Content != `Task `+task.ID+` "Write the parser" is done (coder reported success): parsed everything` {
		t.Fatalf("lead received %+v; want one message from coder", got)
	}
	sent, err := s.Tail("coder", 10)
	if err != nil || len(sent) != 1 || sent[0].ID != got[0].ID || sent[0].ReceiverID != "lead" {
		t.Fatalf("coder's log: %+v, %v; want its copy", sent, err)
	}
	if stored, err := s.Task(task.ID); err != nil || len(stored.Untold) != 0 {
		t.Fatalf("task after the tell: %+v, %v", stored, err)
	}
}

// endWrittenUntold ends task id as a process killed after the task's write
// leaves it: done by coder, its tell written into the task at at, unsent.
func endWrittenUntold(t *testing.T, s *Store, cfg *storage.Config, id string, at time.Time) taskTell {
	t.Helper()
	var tl taskTell
	path, _ := s.files.DocPath(storage.Tasks, id)
	if _, err := storage.UpdateDoc(context.Background(), s.files, path, storage.ModeFile, func(doc *Task, _ bool) error {
		tells, err := s.changeTask(cfg, doc, "coder", TaskChange{Status: StatusDone, Result: "success", Summary: "parsed"}, at)
		if err != nil || len(tells) != 1 {
			t.Fatalf("tells %+v, %v", tells, err)
		}
		tl = tells[0]
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return tl
}

// startedTask is a task of lead's for coder, in progress.
func startedTask(t *testing.T, s *Store, cfg *storage.Config) Task {
	t.Helper()
	task, err := s.CreateTask(context.Background(), cfg, NewTask{Title: "Write the parser", Assignee: "coder", Requester: "lead", Status: StatusInProgress})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// TestTaskEndUntoldAfterKill: a change written whose message was not sent
// (a process killed in between) is left alone while it may be in flight,
// then reported by doctor and sent by doctor --repair, once.
func TestTaskEndUntoldAfterKill(t *testing.T) {
	s, cfg := tellTeam(t)
	ctx := context.Background()
	task := startedTask(t, s, cfg)
	tl := endWrittenUntold(t, s, cfg, task.ID, time.Now().UTC())
	if ps, err := s.untoldTaskProblems(ctx, false); err != nil || len(ps) != 0 {
		t.Fatalf("a tell that may be in flight: %+v, %v; want none reported", ps, err)
	}
	// as old as a kill: reported, repairable; repaired once
	path, _ := s.files.DocPath(storage.Tasks, task.ID)
	if _, err := storage.UpdateDoc(ctx, s.files, path, storage.ModeFile, func(doc *Task, _ bool) error {
		doc.Untold[0].At = time.Now().Add(-2 * inFlight).UTC()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ps, err := s.untoldTaskProblems(ctx, false)
	if err != nil || len(ps) != 1 || !ps[0].Repairable || ps[0].Repaired || !strings.Contains(ps[0].Reason, "lead may not be told yet") {
		t.Fatalf("doctor: %+v, %v; want one repairable problem", ps, err)
	}
	if len(inboxOf(t, s, "lead")) != 0 {
		t.Fatal("doctor without --repair told")
	}
	if ps, err = s.untoldTaskProblems(ctx, true); err != nil || len(ps) != 1 || !ps[0].Repaired {
		t.Fatalf("doctor --repair: %+v, %v", ps, err)
	}
	if ps, err = s.untoldTaskProblems(ctx, true); err != nil || len(ps) != 0 {
		t.Fatalf("doctor --repair again: %+v, %v; want nothing left", ps, err)
	}
	if got := inboxOf(t, s, "lead"); len(got) != 1 || got[0].ID != tl.MessageID || got[0].SenderID != "coder" {
		t.Fatalf("lead received %+v; want the one tell", got)
	}
}

// TestTaskEndHalfToldAfterKill: a process killed after the receiver's copy
// of the tell: the task's next change sends what is left, the sender's
// copy only.
func TestTaskEndHalfToldAfterKill(t *testing.T) {
	s, cfg := tellTeam(t)
	ctx := context.Background()
	task := startedTask(t, s, cfg)
	tl := endWrittenUntold(t, s, cfg, task.ID, time.Now().Add(-2*inFlight).UTC())
	inbox, _ := s.files.ChatPath("lead")
	if err := s.files.AppendJSONL(ctx, inbox, Message{ID: tl.MessageID, SenderID: tl.From, Content: tl.Content, CreatedAt: tl.At.Format(timeFormat), RelatedTaskID: task.ID, Kind: KindSystem}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateTask(ctx, cfg, task.ID, "lead", TaskChange{Status: StatusTodo}); err != nil {
		t.Fatal(err)
	}
	if got := inboxOf(t, s, "lead"); len(got) != 1 || got[0].ID != tl.MessageID {
		t.Fatalf("lead received %+v; want the tell once", got)
	}
	if sent, _ := s.Tail("coder", 10); len(sent) != 1 || sent[0].ID != tl.MessageID || sent[0].ReceiverID != "lead" {
		t.Fatalf("coder's log holds %+v; want its copy of the tell, once", sent)
	}
	if stored, err := s.Task(task.ID); err != nil || len(stored.Untold) != 0 {
		t.Fatalf("task after the repair: %+v, %v", stored, err)
	}
}
