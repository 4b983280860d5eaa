package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// deliver sends a message to coder and hands it to coder's chat session
// through get_pending_messages, as a running agent receives it; a second
// call (list_tasks) acknowledges it, so that read.json then stays as it is.
func (p *project) deliver(cs *mcp.ClientSession, token, from, content string) {
	p.t.Helper()
	p.send(from, "coder", content)
	for _, tool := range []string{"get_pending_messages", "list_tasks"} {
		if r := call(p.t, cs, tool, map[string]any{"session_token": token}); r.isError {
			p.t.Fatalf("%s: %s", tool, r.text)
		}
	}
}

// One use per marker (DESIGN section 11): a message with two different
// markers authorizes one operation for each, and each only once.
func TestTwoMarkersOneMessage(t *testing.T) {
	p := newProject(t)
	cs := p.connect("")
	token := p.authenticate(cs, "coder", "chat")
	work := p.taskInProgress("coder", "current work")
	p.deliver(cs, token, "lead", "@@タスク作成: A @@タスク通知: B")
	if r := call(t, cs, "request_task", map[string]any{"session_token": token}); r.isError || r.data["task"].(map[string]any)["title"] != "A" {
		t.Fatalf("request_task: %s", r.text)
	}
	r := call(t, cs, "notify_task_session", map[string]any{"session_token": token})
	if r.isError || r.str("task_id") != work.ID {
		t.Fatalf("notify_task_session after request_task on the same message: %s", r.text)
	}
	for _, tool := range []string{"request_task", "notify_task_session"} {
		if r := call(t, cs, tool, map[string]any{"session_token": token}); r.code() != "marker_already_used" {
			t.Fatalf("second %s: %s", tool, r.text)
		}
	}
	if notes := notificationLines(t, p, "coder"); len(notes) != 1 || notes[0].Message != "B" {
		t.Fatalf("notes: %+v", notes)
	}
	tasks, _, _, _ := p.store.Tasks(fsstore.TaskFilter{Assignee: "coder"})
	if len(tasks) != 2 {
		t.Fatalf("coder has %d tasks, want 2", len(tasks))
	}
}

// @@タスク調整 changes only backlog and todo tasks (seed 003): not a task
// in progress (its description, or marked done), blocked, done (reopened)
// or cancelled; a refusal changes nothing. A todo task still changes.
func TestAdjustOnlyPlannedTasks(t *testing.T) {
	p := newProject(t)
	ctx := context.Background()
	cs := p.connect("")
	token := p.authenticate(cs, "coder", "chat")
	running := p.taskInProgress("coder", "running")
	done := p.taskInProgress("coder", "finished")
	if _, err := p.store.UpdateTask(ctx, p.cfg, done.ID, "coder", fsstore.TaskChange{Status: fsstore.StatusDone}); err != nil {
		t.Fatal(err)
	}
	desc := "rewritten"
	for _, tc := range []struct {
		id   string
		args map[string]any
	}{
		{running.ID, map[string]any{"description": desc}},
		{running.ID, map[string]any{"status": "done"}},
		{running.ID, map[string]any{"status": "cancelled"}},
		{done.ID, map[string]any{"status": "todo"}},
		{done.ID, map[string]any{"description": desc}},
	} {
		p.deliver(cs, token, "lead", "@@タスク調整: change it")
		before := p.tree()
		args := map[string]any{"session_token": token, "task_id": tc.id}
		for k, v := range tc.args {
			args[k] = v
		}
		if r := call(t, cs, "update_task_from_chat", args); r.code() != "task_not_adjustable" {
			t.Fatalf("update_task_from_chat %v: %s", tc.args, r.text)
		}
		if p.tree() != before {
			t.Fatalf("refused update_task_from_chat %v changed files", tc.args)
		}
	}
	todo, err := p.store.CreateTask(ctx, p.cfg, fsstore.NewTask{Title: "planned", Assignee: "coder", Requester: "lead", Status: fsstore.StatusTodo})
	if err != nil {
		t.Fatal(err)
	}
	p.deliver(cs, token, "lead", "@@タスク調整: change it")
	if r := call(t, cs, "update_task_from_chat", map[string]any{"session_token": token, "task_id": todo.ID, "description": desc}); r.isError {
		t.Fatalf("adjust a todo task: %s", r.text)
	}
}

// Only a marker in the ordinary text of a message the session has received
// (handed to it by get_pending_messages) counts: not one in a fenced code
// block, inline code or a > quote, nor one in a message not fetched yet.
func TestMarkerOnlyInOrdinaryReceivedText(t *testing.T) {
	p := newProject(t)
	cs := p.connect("")
	token := p.authenticate(cs, "coder", "chat")
	request := func() result {
		return call(t, cs, "request_task", map[string]any{"session_token": token, "title": "x"})
	}
	p.send("lead", "coder", "@@タスク作成: not fetched yet")
	before := p.tree()
	if r := request(); r.code() != "task_request_marker_required" {
		t.Fatalf("marker in a message not fetched yet: %s", r.text)
	}
	if p.tree() != before {
		t.Fatal("refused request_task changed files")
	}
	for _, text := range []string{
		"例です:\n```\n@@タスク作成: fenced\n```",
		"send `@@タスク作成: title` to ask me",
		"> @@タスク作成: quoted\nwhat do you think?",
		"例です:\n\n    @@タスク作成: indented code",
	} {
		p.deliver(cs, token, "lead", text)
		before := p.tree()
		if r := request(); r.code() != "task_request_marker_required" {
			t.Fatalf("marker in %q: %s", text, r.text)
		}
		if p.tree() != before {
			t.Fatalf("refused request_task after %q changed files", text)
		}
	}
	// The marked message received counts, whatever arrived after it unfetched.
	p.deliver(cs, token, "lead", "```\ncode\n```\n@@タスク作成: ordinary text")
	p.send("lead", "coder", "thanks")
	if r := request(); r.isError {
		t.Fatalf("marker in ordinary text of the latest message received: %s", r.text)
	}
}

// A marker is the sender's instruction, so the sender's authority counts
// (DESIGN section 11): an AI peer or a human who is neither the task's
// creator, an ancestor of its assignee nor a manager only asks for the
// change, which waits for approval (the sender is told, the approvers get
// a system message) and changes nothing until a human who may decide
// approves it; the task's ancestor changes it at once.
func TestChatChangeAuthority(t *testing.T) {
	p := newProject(t)
	ctx := context.Background()
	addBossAndGuest(t, p)
	cs := p.connect("")
	token := p.authenticate(cs, "coder", "chat")
	planned, err := p.store.CreateTask(ctx, p.cfg, fsstore.NewTask{Title: "planned", Assignee: "coder", Requester: "lead", Status: fsstore.StatusTodo})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ from, tool, message string }{
		{"reviewer", "update_task_from_chat", "@@タスク調整: cancel it"},
		{"guest", "update_task_from_chat", "@@タスク調整: cancel it"},
		{"reviewer", "start_task_from_chat", "@@タスク開始: start it"},
	} {
		p.deliver(cs, token, c.from, c.message)
		args := map[string]any{"session_token": token, "task_id": planned.ID}
		if c.tool == "update_task_from_chat" {
			args["status"] = "cancelled"
		}
		r := call(t, cs, c.tool, args)
		if r.isError || r.str("change_status") != "pending_approval" || !strings.Contains(r.str("instruction"), "Tell "+c.from) {
			t.Fatalf("%s from %s: %s", c.tool, c.from, r.text)
		}
		if got, _ := p.store.Task(planned.ID); got.Status != fsstore.StatusTodo || got.PendingChange == nil || got.PendingChange.By != c.from {
			t.Fatalf("after %s's %s: %+v", c.from, c.tool, got)
		}
	}
	checkChangeDecision(t, p, planned.ID)
	checkChangeAtOnce(t, p, cs, token)
}

// checkChangeDecision: lead was asked to decide reviewer's request to start
// task id; reviewer (an AI, who asked) and guest (a human not above coder)
// may not decide it; lead, coder's parent, approves, and the task starts.
func checkChangeDecision(t *testing.T, p *project, id string) {
	t.Helper()
	ctx := context.Background()
	planned := fsstore.Task{ID: id}
	msgs := chatLines(t, p, "lead")
	if len(msgs) < 3 || msgs[len(msgs)-1].Kind != fsstore.KindSystem || !strings.Contains(msgs[len(msgs)-1].Content, "aipm task approve "+planned.ID) {
		t.Fatalf("lead was not asked: %+v", msgs)
	}
	for _, who := range []string{"reviewer", "guest"} {
		if _, err := p.store.UpdateTask(ctx, p.cfg, planned.ID, who, fsstore.TaskChange{Approval: fsstore.ApprovalApproved}); err == nil || !strings.Contains(err.Error(), "may not approve") {
			t.Fatalf("%s approved: %v", who, err)
		}
	}
	if got, err := p.store.UpdateTask(ctx, p.cfg, planned.ID, "lead", fsstore.TaskChange{Approval: fsstore.ApprovalApproved}); err != nil || got.Status != fsstore.StatusInProgress || got.PendingChange != nil {
		t.Fatalf("lead's approval: %+v %v", got, err)
	}
}

// checkChangeAtOnce: the task's creator (guest) and the assignee's parent
// (lead) change a task at once.
func checkChangeAtOnce(t *testing.T, p *project, cs *mcp.ClientSession, token string) {
	t.Helper()
	other, err := p.store.CreateTask(context.Background(), p.cfg, fsstore.NewTask{Title: "guest's", Assignee: "coder", Requester: "guest", Status: fsstore.StatusTodo})
	if err != nil {
		t.Fatal(err)
	}
	for _, from := range []string{"guest", "lead"} {
		p.deliver(cs, token, from, "@@タスク調整: new description")
		r := call(t, cs, "update_task_from_chat", map[string]any{"session_token": token, "task_id": other.ID, "description": "by " + from})
		if r.isError || r.str("change_status") != "applied" || r.data["task"].(map[string]any)["description"] != "by "+from {
			t.Fatalf("%s's change: %s", from, r.text)
		}
	}
}
