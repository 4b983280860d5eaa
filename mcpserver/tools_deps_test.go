package mcpserver_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// depsCase is one call that names blocked_by, made by coder's session
// (chat: after lead's marked message) on a project setup made.
type depsCase struct {
	name    string
	tool    string
	message string // the marked message lead sends a chat session first
	// setup makes the tasks the call names and returns its arguments and
	// the blockers the changed or created task must have.
	setup func(p *project) (args map[string]any, want []string)
	code  string // "" for success
	says  string // in the answer's instruction or the refusal
	// guest sends the marked message: a sender without authority over
	// the task, whose change waits for approval (want: the blockers then).
	guest bool
}

// absentTask is a well-formed task id no task has.
const absentTask = "tsk_01M7YZWACRA0328GMTHNDHB18Z"

var requestDepsCases = []depsCase{
	{name: "waits for a blocker", setup: func(p *project) (map[string]any, []string) {
		first := reviewersTask(p, "", fsstore.StatusTodo)
		return map[string]any{"title": "after the review", "blocked_by": []string{first}}, []string{first}
	}, says: "It waits for"},
	{name: "a missing blocker", setup: func(*project) (map[string]any, []string) {
		return map[string]any{"title": "after nothing", "blocked_by": []string{absentTask}}, nil
	}, code: "task_not_found", says: absentTask},
	{name: "a cycle through its parent", setup: func(p *project) (map[string]any, []string) {
		parent := reviewersTask(p, "", fsstore.StatusTodo)
		waitsForParent := p.unassignedTask("waits for the parent", "", parent).ID
		return map[string]any{"title": "the subtask", "parent_task_id": parent, "blocked_by": []string{waitsForParent}}, nil
	}, code: "dependency_cycle", says: "→"},
}

// TestRequestTaskBlockedBy: request_task's blocked_by, from a task session
// (the tools) and from a chat session under @@タスク作成 (the chat
// markers' task creation), at each protocol revision: the new task waits
// for what it names, and get_task says so; a blocker that does not exist,
// or a cycle (through the parent too), is refused, naming it, and creates
// nothing.
func TestRequestTaskBlockedBy(t *testing.T) {
	for _, rev := range revisions {
		for _, purpose := range []string{"task", "chat"} {
			for _, tc := range requestDepsCases {
				tc.tool, tc.message = "request_task", "@@タスク作成: a task that waits"
				t.Run(rev+"/"+purpose+"/"+tc.name, func(t *testing.T) { tc.run(t, rev, purpose) })
			}
		}
	}
}

var adjustDepsCases = []depsCase{
	{name: "set", setup: func(p *project) (map[string]any, []string) {
		first := reviewersTask(p, "", fsstore.StatusTodo)
		return map[string]any{"task_id": codersBacklogTask(p), "blocked_by": []string{first}}, []string{first}
	}},
	{name: "set with a status", setup: func(p *project) (map[string]any, []string) {
		first := reviewersTask(p, "", fsstore.StatusTodo)
		return map[string]any{"task_id": codersBacklogTask(p), "blocked_by": []string{first}, "status": "todo"}, []string{first}
	}},
	{name: "cleared", setup: func(p *project) (map[string]any, []string) {
		first := reviewersTask(p, "", fsstore.StatusTodo)
		id := codersBacklogTask(p, first)
		return map[string]any{"task_id": id, "blocked_by": []string{}}, nil
	}},
	{name: "a cycle", setup: func(p *project) (map[string]any, []string) {
		id := codersBacklogTask(p)
		return map[string]any{"task_id": id, "blocked_by": []string{reviewersTask(p, id, fsstore.StatusTodo)}}, nil
	}, code: "dependency_cycle", says: "→"},
	{name: "a missing blocker", setup: func(p *project) (map[string]any, []string) {
		return map[string]any{"task_id": codersBacklogTask(p), "blocked_by": []string{absentTask}}, nil
	}, code: "task_not_found", says: absentTask},
	{name: "itself", setup: func(p *project) (map[string]any, []string) {
		id := codersBacklogTask(p)
		return map[string]any{"task_id": id, "blocked_by": []string{id}}, nil
	}, code: "dependency_cycle", says: "itself"},
	{name: "a sender without authority", message: "@@タスク調整: wait for the review", setup: func(p *project) (map[string]any, []string) {
		first := reviewersTask(p, "", fsstore.StatusTodo)
		return map[string]any{"task_id": codersBacklogTask(p), "blocked_by": []string{first}}, []string{first}
	}, guest: true, says: "waits for approval by [lead]"},
}

// TestUpdateTaskFromChatBlockedBy: @@タスク調整 with blocked_by replaces
// what the task waits for ([] clears it), beside a status change; a cycle
// is refused with dependency_cycle naming it, a blocker that does not
// exist with task_not_found, and the change of a sender without authority
// over the task waits for approval, as any adjustment; a refusal changes
// nothing.
func TestUpdateTaskFromChatBlockedBy(t *testing.T) {
	for _, rev := range revisions {
		for _, tc := range adjustDepsCases {
			tc.tool = "update_task_from_chat"
			if tc.message == "" {
				tc.message = "@@タスク調整: dependencies"
			}
			t.Run(rev+"/"+tc.name, func(t *testing.T) { tc.run(t, rev, "chat") })
		}
	}
}

// run plays the case on a new project at protocol revision rev, from a
// session of coder's of purpose.
func (tc depsCase) run(t *testing.T, rev, purpose string) {
	p := newProject(t)
	addBossAndGuest(t, p)
	if purpose == "task" {
		p.taskInProgress("coder", "the session's task")
	}
	cs := p.connect(rev)
	token := p.authenticate(cs, "coder", purpose)
	args, want := tc.setup(p)
	if purpose == "chat" {
		from := "lead"
		if tc.guest {
			from = "guest"
		}
		p.deliver(cs, token, from, tc.message)
	}
	args["session_token"] = token
	p.makeTasksDir()
	before := p.tree()
	r := call(t, cs, tc.tool, args)
	if r.code() != tc.code || !strings.Contains(r.text, tc.says) {
		t.Fatalf("%s(%v): %s; want code %q saying %q", tc.tool, args, r.text, tc.code, tc.says)
	}
	if tc.code != "" {
		if p.tree() != before {
			t.Fatalf("a refused %s changed .ai-pm", tc.tool)
		}
		return
	}
	task, _ := r.data["task"].(map[string]any)
	id, _ := task["id"].(string)
	if tc.guest {
		approveChange(t, p, id, want)
		ids := make([]any, len(want))
		for i, w := range want {
			ids[i] = w
		}
		task["blocked_by"] = ids // the view was of the task before the approval
	}
	got, err := p.store.Task(id)
	if err != nil || !slices.Equal(got.BlockedBy, want) || !sameIDs(task["blocked_by"], want) {
		t.Fatalf("the task waits for %v (%v), its view says %v; want %v", got.BlockedBy, err, task["blocked_by"], want)
	}
	if st, ok := args["status"]; ok && got.Status != st {
		t.Fatalf("status %s, want %s", got.Status, st)
	}
	checkWaitingFor(t, cs, token, id, want)
}

// checkWaitingFor: get_task of task id says what it waits for.
func checkWaitingFor(t *testing.T, cs *mcp.ClientSession, token, id string, blockers []string) {
	t.Helper()
	r := call(t, cs, "get_task", map[string]any{"session_token": token, "task_id": id})
	task, _ := r.data["task"].(map[string]any)
	waiting, _ := task["waiting_for"].(string)
	for _, b := range blockers {
		if !strings.Contains(waiting, b+" (todo)") {
			t.Errorf("get_task(%s) says it waits for %q, want %s named", id, waiting, b)
		}
	}
	if len(blockers) == 0 && waiting != "" {
		t.Errorf("get_task(%s) says it waits for %q, want nothing", id, waiting)
	}
}

// approveChange checks that the change asked on task id waits for
// approval, carrying the blockers want and changing nothing yet, then has
// lead approve it.
func approveChange(t *testing.T, p *project, id string, want []string) {
	t.Helper()
	pending, err := p.store.Task(id)
	if err != nil || pending.PendingChange == nil || pending.PendingChange.BlockedBy == nil || !slices.Equal(*pending.PendingChange.BlockedBy, want) || len(pending.BlockedBy) != 0 {
		t.Fatalf("the asked change: %+v, %v; want it pending, carrying %v", pending, err, want)
	}
	cfg, err := p.store.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.store.Decide(context.Background(), cfg, id, "lead", fsstore.ApprovalApproved, ""); err != nil {
		t.Fatal(err)
	}
}

// sameIDs says a view's list of ids (JSON) holds exactly want.
func sameIDs(view any, want []string) bool {
	list, _ := view.([]any)
	if len(list) != len(want) {
		return false
	}
	for i, v := range list {
		if v != want[i] {
			return false
		}
	}
	return true
}

// reviewersTask creates a task of reviewer's in status, waiting for
// blockers when given, and returns its id.
func reviewersTask(p *project, blocker, status string) string {
	p.t.Helper()
	var blockers []string
	if blocker != "" {
		blockers = []string{blocker}
	}
	t, err := p.store.CreateTask(context.Background(), p.cfg, fsstore.NewTask{Title: "reviewer's work", Assignee: "reviewer", Requester: "lead", Status: status, BlockedBy: blockers})
	if err != nil {
		p.t.Fatal(err)
	}
	return t.ID
}

// codersBacklogTask creates a backlog task of coder's, which lead asked
// for, waiting for blockers, and returns its id.
func codersBacklogTask(p *project, blockers ...string) string {
	p.t.Helper()
	t, err := p.store.CreateTask(context.Background(), p.cfg, fsstore.NewTask{Title: "coder's plan", Assignee: "coder", Requester: "lead", Status: fsstore.StatusBacklog, BlockedBy: blockers})
	if err != nil {
		p.t.Fatal(err)
	}
	return t.ID
}

// TestParentWaitsForSubtask: the parent rule through get_next_action. A
// task session whose task has a subtask of another agent's open waits,
// told which subtask and that it may exit (aipm starts it again); the
// wait ends with work the moment the subtask is done.
func TestParentWaitsForSubtask(t *testing.T) {
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			p := newProject(t)
			ctx := context.Background()
			parent := p.taskInProgress("coder", "the whole feature")
			sub, err := p.store.CreateTask(ctx, p.cfg, fsstore.NewTask{Title: "a part", Assignee: "reviewer", Requester: "coder", ParentID: parent.ID})
			if err != nil {
				t.Fatal(err)
			}
			cs := p.connect(rev)
			token := p.authenticate(cs, "coder", "task")
			r := call(t, cs, "get_next_action", map[string]any{"session_token": token, "wait_seconds": 1})
			if r.str("action") != "wait_for_task" || !strings.Contains(r.str("instruction"), "subtask "+sub.ID+" (todo)") || !strings.Contains(r.str("instruction"), "logout") {
				t.Fatalf("a parent waiting for its subtask: %s", r.text)
			}
			done := make(chan result, 1)
			go func() {
				r, err := tryCall(cs, "get_next_action", map[string]any{"session_token": token, "wait_seconds": 50})
				if err != nil {
					r.text = err.Error()
				}
				done <- r
			}()
			for _, st := range []string{fsstore.StatusInProgress, fsstore.StatusDone} {
				if _, err := p.store.UpdateTask(ctx, p.cfg, sub.ID, "reviewer", fsstore.TaskChange{Status: st}); err != nil {
					t.Fatal(err)
				}
			}
			if r := <-done; r.str("action") != "work" || !strings.Contains(r.str("instruction"), parent.ID) {
				t.Fatalf("the parent after its subtask was done: %s", r.text)
			}
		})
	}
}
