package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

// flowStore is a test store with a human, lead, AI agents coder, tester
// and ops, the group qa = [tester], and its config.
func flowStore(t *testing.T) (*Store, *storage.Config) {
	t.Helper()
	s := newTestStore(t)
	for _, a := range []NewAgent{{ID: "lead", Type: storage.AgentHuman}, {ID: "coder", Type: storage.AgentAI}, {ID: "tester", Type: storage.AgentAI}, {ID: "ops", Type: storage.AgentAI}} {
		if _, err := s.AddAgent(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(s.files.ConfigPath(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("\n[groups]\nqa = [\"tester\"]\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	cfg, err := s.files.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	return s, cfg
}

// add creates a task, failing the test on an error.
func add(t *testing.T, s *Store, cfg *storage.Config, in NewTask) Task {
	t.Helper()
	if in.Requester == "" {
		in.Requester = "lead"
	}
	task, err := s.CreateTask(context.Background(), cfg, in)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// status reads a task's status.
func status(t *testing.T, s *Store, id string) string {
	t.Helper()
	task, err := s.Task(id)
	if err != nil {
		t.Fatal(err)
	}
	return task.Status
}

// setStatus changes a task's status as lead, failing the test on an error.
func setStatus(t *testing.T, s *Store, cfg *storage.Config, id, to, reason string) {
	t.Helper()
	if _, err := s.UpdateTask(context.Background(), cfg, id, "lead", TaskChange{Status: to, Reason: reason}); err != nil {
		t.Fatal(err)
	}
}

// handEdit rewrites a task file as an editor saves it (a rename), with
// change applied to its JSON object.
func handEdit(t *testing.T, s *Store, id string, change func(m map[string]any)) {
	t.Helper()
	path, _ := s.files.DocPath(storage.Tasks, id)
	if _, err := editDoc(path, ".swp", false, change); err != nil {
		t.Fatal(err)
	}
}

func codeOf(err error) string {
	var ce *storage.CodeError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return ""
}

// Every path that sets what a task waits for refuses a cycle, naming it;
// nothing is written.
func TestDependencyCycleRefused(t *testing.T) {
	ctx := context.Background()
	s, cfg := flowStore(t)
	a := add(t, s, cfg, NewTask{Title: "A"})
	b := add(t, s, cfg, NewTask{Title: "B", BlockedBy: []string{a.ID}})
	c := add(t, s, cfg, NewTask{Title: "C", BlockedBy: []string{b.ID}})
	parent := add(t, s, cfg, NewTask{Title: "P"})
	child := add(t, s, cfg, NewTask{Title: "child", ParentID: parent.ID})
	afterParent := add(t, s, cfg, NewTask{Title: "after P", BlockedBy: []string{parent.ID}})

	for _, tc := range []struct {
		name, id string
		change   BlockersChange
		want     string // the cycle named
	}{
		{"through a chain", a.ID, BlockersChange{Add: []string{c.ID}}, a.ID + " → " + c.ID + " → " + b.ID + " → " + a.ID},
		{"two tasks", a.ID, BlockersChange{Add: []string{b.ID}}, a.ID + " → " + b.ID + " → " + a.ID},
		{"a subtask waiting for its parent", child.ID, BlockersChange{Add: []string{parent.ID}}, child.ID + " → " + parent.ID + " → " + child.ID},
		{"a parent waiting for what waits for it", parent.ID, BlockersChange{Set: &[]string{afterParent.ID}}, parent.ID + " → " + afterParent.ID + " → " + parent.ID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, _ := s.files.DocPath(storage.Tasks, tc.id)
			before, _ := os.ReadFile(path)
			_, err := s.UpdateTask(ctx, cfg, tc.id, "lead", TaskChange{Blockers: &tc.change})
			if codeOf(err) != storage.CodeDependencyCycle || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want a dependency_cycle naming %s", err, tc.want)
			}
			if after, _ := os.ReadFile(path); string(after) != string(before) {
				t.Fatalf("a refused change wrote the task:\n%s", after)
			}
		})
	}
	// A new subtask of P that waits for what waits for P.
	_, err := s.CreateTask(ctx, cfg, NewTask{Title: "new child", ParentID: parent.ID, BlockedBy: []string{afterParent.ID}, Requester: "lead"})
	if codeOf(err) != storage.CodeDependencyCycle || !strings.Contains(err.Error(), "the new task") {
		t.Fatalf("a new subtask closing a cycle: %v", err)
	}
	for _, tc := range []struct {
		name     string
		blockers []string
		want     string
	}{
		{"missing", []string{"tsk_01KAQ7ZZZZZZZZZZZZZZZZZZZZ"}, "does not exist"},
		{"twice", []string{a.ID, a.ID}, "named twice"},
		{"not an id", []string{"nope"}, "blocked by"},
	} {
		if _, err := s.CreateTask(ctx, cfg, NewTask{Title: tc.name, BlockedBy: tc.blockers, Requester: "lead"}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	self := BlockersChange{Add: []string{a.ID}}
	if _, err := s.UpdateTask(ctx, cfg, a.ID, "lead", TaskChange{Blockers: &self}); codeOf(err) != storage.CodeDependencyCycle {
		t.Errorf("a task waiting for itself: %v", err)
	}
	// A diamond is no cycle.
	d := add(t, s, cfg, NewTask{Title: "D", BlockedBy: []string{b.ID, c.ID}})
	if ws, _, _ := s.waitsOn(d.ID); WaitsText(ws) != b.ID+" (todo), "+c.ID+" (todo)" {
		t.Errorf("D waits for %q", WaitsText(ws))
	}
}

// A task goes in progress by itself when its last blocker is done, once,
// if it is assigned and todo; other tasks waiting stay as they are.
func TestStartWhenReady(t *testing.T) {
	ctx := context.Background()
	s, cfg := flowStore(t)
	a := add(t, s, cfg, NewTask{Title: "A", Assignee: "coder", Status: StatusInProgress})
	a2 := add(t, s, cfg, NewTask{Title: "A2", Assignee: "ops", Status: StatusInProgress})
	b := add(t, s, cfg, NewTask{Title: "B", Assignee: "tester", BlockedBy: []string{a.ID, a2.ID}})
	unassigned := add(t, s, cfg, NewTask{Title: "nobody's", BlockedBy: []string{a.ID}})
	backlog := add(t, s, cfg, NewTask{Title: "later", Assignee: "ops", Status: StatusBacklog, BlockedBy: []string{a.ID}})

	setStatus(t, s, cfg, a.ID, StatusDone, "")
	if got := status(t, s, b.ID); got != StatusTodo {
		t.Fatalf("B is %s with A2 not done", got)
	}
	if ready, waiting, _ := s.TaskCounts(); ready != 1 || waiting != 1 {
		t.Errorf("ready %d, waiting %d; want the unassigned task ready, B waiting", ready, waiting)
	}
	setStatus(t, s, cfg, a2.ID, StatusDone, "")
	got, _ := s.Task(b.ID)
	if got.Status != StatusInProgress || !got.StartedReady || got.StatusChangedBy != storage.SystemSender {
		t.Fatalf("B after its blockers: %+v", got)
	}
	for id, want := range map[string]string{unassigned.ID: StatusTodo, backlog.ID: StatusBacklog} {
		if got := status(t, s, id); got != want {
			t.Errorf("%s is %s, want %s", id, got, want)
		}
	}
	// Moved back to todo by a human, it does not start again by itself.
	setStatus(t, s, cfg, b.ID, StatusTodo, "")
	if started, err := s.Flow(ctx, cfg); err != nil || len(started) != 0 || status(t, s, b.ID) != StatusTodo {
		t.Fatalf("Flow started %v (err %v): B is %s", started, err, status(t, s, b.ID))
	}
	// Waiting anew, it starts again once ready.
	c := add(t, s, cfg, NewTask{Title: "C", Assignee: "coder", Status: StatusInProgress})
	more := BlockersChange{Add: []string{c.ID}}
	if _, err := s.UpdateTask(ctx, cfg, b.ID, "lead", TaskChange{Blockers: &more}); err != nil {
		t.Fatal(err)
	}
	remove := BlockersChange{Remove: []string{c.ID}}
	if _, err := s.UpdateTask(ctx, cfg, b.ID, "lead", TaskChange{Blockers: &remove}); err != nil {
		t.Fatal(err)
	}
	if got := status(t, s, b.ID); got != StatusInProgress {
		t.Fatalf("B, ready again after a dependency was taken away, is %s", got)
	}
}

// A blocker done by a hand edit of its file starts what waits for it in
// the watcher's pass (Flow); a second pass starts nothing more.
func TestFlowAfterHandEdit(t *testing.T) {
	ctx := context.Background()
	s, cfg := flowStore(t)
	a := add(t, s, cfg, NewTask{Title: "A", Assignee: "coder", Status: StatusInProgress})
	b := add(t, s, cfg, NewTask{Title: "B", Assignee: "tester", BlockedBy: []string{a.ID}})
	handEdit(t, s, a.ID, func(m map[string]any) { m["status"] = StatusDone })
	started, err := s.Flow(ctx, cfg)
	if err != nil || len(started) != 1 || started[0].ID != b.ID {
		t.Fatalf("Flow: %v, %v", started, err)
	}
	if again, err := s.Flow(ctx, cfg); err != nil || len(again) != 0 {
		t.Fatalf("a second Flow started %v (err %v)", again, err)
	}
	// A dependency added by hand on a task not done makes the next task wait.
	c := add(t, s, cfg, NewTask{Title: "C", Assignee: "ops"})
	d := add(t, s, cfg, NewTask{Title: "D", Assignee: "coder"})
	handEdit(t, s, d.ID, func(m map[string]any) { m["blockedBy"] = []string{c.ID} })
	if ws, _, _ := s.waitsOn(d.ID); len(ws) != 1 || ws[0].TaskID != c.ID {
		t.Fatalf("D waits for %v", ws)
	}
}

// A blocker stopped tells the waiting task's requester and assignee, and
// a subtask stopped tells its parent's assignee: once per stop, whatever
// passes follow.
func TestStopNewsTold(t *testing.T) {
	ctx := context.Background()
	s, cfg := flowStore(t)
	a := add(t, s, cfg, NewTask{Title: "A", Assignee: "coder", Status: StatusInProgress})
	b := add(t, s, cfg, NewTask{Title: "B", Assignee: "tester", BlockedBy: []string{a.ID}})
	parent := add(t, s, cfg, NewTask{Title: "P", Assignee: "ops", Status: StatusInProgress})
	child := add(t, s, cfg, NewTask{Title: "child", Assignee: "coder", ParentID: parent.ID})

	if _, err := s.UpdateTask(ctx, cfg, a.ID, "coder", TaskChange{Status: StatusBlocked, Reason: "the API is down"}); err != nil {
		t.Fatal(err) // lead, B's requester, is told in A's own end message
	}
	for i := 0; i < 2; i++ {
		if _, err := s.Flow(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	about := func(agent, taskID string) int {
		msgs, _, err := s.Unread(ctx, agent, 100, true)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, m := range msgs {
			if m.Kind == KindSystem && strings.Contains(m.Content, "waits for task "+taskID) || strings.Contains(m.Content, "Subtask "+taskID) {
				n++
			}
		}
		return n
	}
	if about("tester", a.ID) != 1 || about("lead", a.ID) != 1 {
		t.Fatalf("told tester %d, lead %d times that B's blocker stopped; want once each", about("tester", a.ID), about("lead", a.ID))
	}
	if status(t, s, b.ID) != StatusTodo {
		t.Fatal("a stopped blocker started B")
	}
	// Cancelled by hand: a new stop, told once more.
	handEdit(t, s, a.ID, func(m map[string]any) { m["status"] = StatusCancelled })
	for i := 0; i < 2; i++ {
		if _, err := s.Flow(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	if about("tester", a.ID) != 2 {
		t.Fatalf("told tester %d times after a second stop; want 2", about("tester", a.ID))
	}
	// A subtask blocked by a hand edit tells the manager once.
	handEdit(t, s, child.ID, func(m map[string]any) { m["status"] = StatusBlocked })
	for i := 0; i < 2; i++ {
		if _, err := s.Flow(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	if about("ops", child.ID) != 1 {
		t.Fatalf("told the parent's assignee %d times that its subtask is blocked; want once", about("ops", child.ID))
	}
}

// A parent in progress waits for its subtasks others work on: its task
// session waits, and is work again once they are done.
func TestParentWaitsForSubtasks(t *testing.T) {
	ctx := context.Background()
	s, cfg := flowStore(t)
	parent := add(t, s, cfg, NewTask{Title: "P", Assignee: "ops", Status: StatusInProgress})
	own := add(t, s, cfg, NewTask{Title: "its own", Assignee: "ops", ParentID: parent.ID})
	child := add(t, s, cfg, NewTask{Title: "child", Assignee: "coder", ParentID: parent.ID, Status: StatusInProgress})
	next, err := s.Work(ctx, cfg, "ops", storage.PurposeTask, nil)
	if err != nil || next.Action != ActWait || len(next.Waits) != 1 || next.Waits[0].TaskID != child.ID {
		t.Fatalf("the parent's work: %+v, %v; want a wait for %s only (not %s, its own)", next, err, child.ID, own.ID)
	}
	setStatus(t, s, cfg, child.ID, StatusDone, "")
	if next, err := s.Work(ctx, cfg, "ops", storage.PurposeTask, nil); err != nil || next.Action != ActWork {
		t.Fatalf("after the subtask: %+v, %v", next, err)
	}
	// A parent in todo goes in progress by itself when its last subtask is done.
	todo := add(t, s, cfg, NewTask{Title: "P2", Assignee: "ops"})
	sub := add(t, s, cfg, NewTask{Title: "sub", Assignee: "tester", ParentID: todo.ID, Status: StatusInProgress})
	if status(t, s, todo.ID) != StatusTodo {
		t.Fatal("P2 started with its subtask open")
	}
	setStatus(t, s, cfg, sub.ID, StatusDone, "")
	if got := status(t, s, todo.ID); got != StatusInProgress {
		t.Fatalf("P2 after its last subtask: %s", got)
	}
}

// Claims: who may, what, in which order, and each refusal.
func TestClaim(t *testing.T) {
	ctx := context.Background()
	s, cfg := flowStore(t)
	low := add(t, s, cfg, NewTask{Title: "low", Priority: "low"})
	urgent := add(t, s, cfg, NewTask{Title: "urgent", Priority: "urgent"})
	qa := add(t, s, cfg, NewTask{Title: "for qa", Group: "qa", Priority: "urgent"})
	blocker := add(t, s, cfg, NewTask{Title: "blocker"})
	waiting := add(t, s, cfg, NewTask{Title: "waiting", BlockedBy: []string{blocker.ID}})

	if _, err := s.CreateTask(ctx, cfg, NewTask{Title: "x", Group: "nope", Requester: "lead"}); codeOf(err) != storage.CodeGroupNotFound {
		t.Errorf("a task for a group that does not exist: %v", err)
	}
	for _, tc := range []struct {
		name, agent, id, code string
	}{
		{"a human", "lead", low.ID, storage.CodeInvalidTransition},
		{"not of the group", "coder", qa.ID, storage.CodeTaskNotReady},
		{"waiting", "coder", waiting.ID, storage.CodeTaskNotReady},
		{"missing", "coder", "tsk_01KAQ7ZZZZZZZZZZZZZZZZZZZZ", ""},
	} {
		if _, err := s.Claim(ctx, cfg, tc.agent, tc.id); err == nil || codeOf(err) != tc.code {
			t.Errorf("%s: %v, want code %q", tc.name, err, tc.code)
		}
	}
	got, err := s.Claim(ctx, cfg, "coder", "")
	if err != nil || got.ID != urgent.ID || got.Assignee != "coder" || got.Status != StatusInProgress {
		t.Fatalf("coder's claim: %+v, %v; want %s, the most urgent it may take", got, err, urgent.ID)
	}
	if _, err := s.Claim(ctx, cfg, "coder", ""); codeOf(err) != storage.CodeInvalidTransition {
		t.Errorf("a second claim with a task in progress: %v", err)
	}
	if _, err := s.Claim(ctx, cfg, "ops", urgent.ID); codeOf(err) != storage.CodeTaskTaken {
		t.Errorf("a claim of a taken task: %v", err)
	}
	if got, err := s.Claim(ctx, cfg, "tester", ""); err != nil || got.ID != qa.ID {
		t.Errorf("tester's claim: %+v, %v; want its group's task", got, err)
	}
	if got, err := s.Claim(ctx, cfg, "ops", ""); err != nil || got.ID != blocker.ID {
		t.Errorf("ops' claim: %+v, %v; want the normal task before the low one", got, err)
	}
	if _, err := s.Claim(ctx, cfg, "ops", ""); codeOf(err) != storage.CodeInvalidTransition {
		t.Errorf("ops' second claim: %v", err)
	}
	done := func(agent, id string) {
		if _, err := s.UpdateTask(ctx, cfg, id, agent, TaskChange{Status: StatusDone}); err != nil {
			t.Fatal(err)
		}
	}
	done("ops", blocker.ID)
	if got, err := s.Claim(ctx, cfg, "ops", ""); err != nil || got.ID != waiting.ID {
		t.Errorf("ops' claim once its blocker is done: %+v, %v; want %s, ready now", got, err, waiting.ID)
	}
	done("ops", waiting.ID)
	setStatus(t, s, cfg, low.ID, StatusCancelled, "")
	if _, err := s.Claim(ctx, cfg, "ops", ""); codeOf(err) != storage.CodeNothingToClaim {
		t.Errorf("a claim with nothing left: %v", err)
	}
}

// An idle chat session is offered a task to claim; the watcher's look
// without a session sees only tasks put in a group's queue.
func TestClaimOffered(t *testing.T) {
	ctx := context.Background()
	s, cfg := flowStore(t)
	anyone := add(t, s, cfg, NewTask{Title: "anyone"})
	if next, err := s.Work(ctx, cfg, "coder", storage.PurposeChat, nil); err != nil || next.Action != ActWait {
		t.Fatalf("the watcher's look at a task of no group: %+v, %v; want wait", next, err)
	}
	qa := add(t, s, cfg, NewTask{Title: "for qa", Group: "qa"})
	if next, err := s.Work(ctx, cfg, "tester", storage.PurposeChat, nil); err != nil || next.Action != ActClaimTask || next.Task.ID != qa.ID {
		t.Fatalf("the watcher's look for qa's tester: %+v, %v", next, err)
	}
	if next, err := s.Work(ctx, cfg, "coder", storage.PurposeChat, nil); err != nil || next.Action != ActWait {
		t.Fatalf("coder is not of qa: %+v, %v", next, err)
	}
	_ = anyone
}

// doctor reports a cycle a hand edit made, and a blocker that does not
// exist.
func TestDoctorReportsDependencies(t *testing.T) {
	ctx := context.Background()
	s, cfg := flowStore(t)
	a := add(t, s, cfg, NewTask{Title: "A"})
	b := add(t, s, cfg, NewTask{Title: "B", BlockedBy: []string{a.ID}})
	handEdit(t, s, a.ID, func(m map[string]any) { m["blockedBy"] = []string{b.ID, "tsk_01KAQ7ZZZZZZZZZZZZZZZZZZZZ"} })
	problems, err := s.Doctor(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, p := range problems {
		text = append(text, p.Reason)
	}
	all := strings.Join(text, "\n")
	for _, want := range []string{a.ID + " → " + b.ID + " → " + a.ID, "aipm task depend " + a.ID + " --on " + b.ID + " --remove", "which does not exist"} {
		if !strings.Contains(all, want) {
			t.Errorf("doctor does not say %q:\n%s", want, all)
		}
	}
	if cycles, err := s.Cycles(); err != nil || len(cycles) != 1 {
		t.Errorf("Cycles: %v, %v", cycles, err)
	}
}

// The edges of the rules: what a start by hand, a human assignee, a
// backlog subtask and a mistyped blocker make of them.
func TestFlowEdges(t *testing.T) {
	ctx := context.Background()
	s, cfg := flowStore(t)
	a := add(t, s, cfg, NewTask{Title: "A", Assignee: "coder", Status: StatusInProgress})

	// Started by hand before its blocker is done, then put back: it waits,
	// and does not start by itself again when the blocker is done.
	early := add(t, s, cfg, NewTask{Title: "early", Assignee: "tester", BlockedBy: []string{a.ID}})
	setStatus(t, s, cfg, early.ID, StatusInProgress, "")
	setStatus(t, s, cfg, early.ID, StatusTodo, "")
	// A human's task goes in progress as an agent's does (nobody is started).
	human := add(t, s, cfg, NewTask{Title: "lead's", Assignee: "lead", BlockedBy: []string{a.ID}})
	setStatus(t, s, cfg, a.ID, StatusDone, "")
	if _, err := s.Flow(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{early.ID: StatusTodo, human.ID: StatusInProgress} {
		if got := status(t, s, id); got != want {
			t.Errorf("%s is %s, want %s", id, got, want)
		}
	}

	// A parent does not wait for a subtask in the backlog.
	parent := add(t, s, cfg, NewTask{Title: "P", Assignee: "ops", Status: StatusInProgress})
	add(t, s, cfg, NewTask{Title: "later", Assignee: "coder", ParentID: parent.ID, Status: StatusBacklog})
	if next, err := s.Work(ctx, cfg, "ops", storage.PurposeTask, nil); err != nil || next.Action != ActWork {
		t.Fatalf("a parent with a backlog subtask: %+v, %v; want work", next, err)
	}

	// A blocker mistyped by hand is taken away as the file has it, though
	// another it waits for does not exist either.
	d := add(t, s, cfg, NewTask{Title: "D", Assignee: "ops"})
	handEdit(t, s, d.ID, func(m map[string]any) {
		m["blockedBy"] = []string{"tsk_typo", "tsk_01KAQ7ZZZZZZZZZZZZZZZZZZZZ"}
	})
	remove := BlockersChange{Remove: []string{"tsk_typo"}}
	if got, err := s.UpdateTask(ctx, cfg, d.ID, "lead", TaskChange{Blockers: &remove}); err != nil || len(got.BlockedBy) != 1 {
		t.Fatalf("removing a mistyped blocker: %+v, %v", got.BlockedBy, err)
	}
}

// The news of many tasks waiting on one stop fits one chat message.
func TestStopNewsFitsAMessage(t *testing.T) {
	ctx := context.Background()
	s, cfg := flowStore(t)
	a := add(t, s, cfg, NewTask{Title: "A", Assignee: "coder", Status: StatusInProgress})
	for i := 0; i < 30; i++ {
		add(t, s, cfg, NewTask{Title: strings.Repeat("long title ", 15), Assignee: "tester", BlockedBy: []string{a.ID}})
	}
	if _, err := s.UpdateTask(ctx, cfg, a.ID, "coder", TaskChange{Status: StatusBlocked, Reason: strings.Repeat("why ", 400)}); err != nil {
		t.Fatal(err)
	}
	msgs, _, err := s.Unread(ctx, "tester", 100, true)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("tester's messages: %d, %v; want one", len(msgs), err)
	}
	if err := storage.CheckText("content", msgs[0].Content); err != nil || !strings.Contains(msgs[0].Content, "aipm task show "+a.ID) {
		t.Fatalf("the news (%d characters) does not fit a message, or does not say where the rest is: %v", len([]rune(msgs[0].Content)), err)
	}
}
