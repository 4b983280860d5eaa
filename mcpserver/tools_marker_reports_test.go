package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// refusedMarker delivers each message to coder's chat session and checks
// that tool, called with args, is refused with code and changes nothing:
// the marker only in the arguments, in a fenced block, in inline code, in
// a quote.
func refusedMarker(t *testing.T, p *project, cs *mcp.ClientSession, token, tool, code, marker string, args map[string]any) {
	t.Helper()
	for _, text := range []string{
		"please do it",
		"例:\n```\n" + marker + " x\n```",
		"write `" + marker + " x` to ask",
		"> " + marker + " x\nwhat do you think?",
	} {
		p.deliver(cs, token, "lead", text)
		before := p.tree()
		a := map[string]any{"session_token": token}
		for k, v := range args {
			a[k] = v
		}
		if r := call(t, cs, tool, a); r.code() != code {
			t.Fatalf("%s after %q: %s", tool, text, r.text)
		}
		if p.tree() != before {
			t.Fatalf("refused %s after %q changed files", tool, text)
		}
	}
}

// @@ブロック報告 (seed 003 将来拡張) through real aipm serve processes: the
// marker must be in the ordinary text of the latest message received (not
// in the arguments, code or a quote); the sender's authority (lead, the
// assignee's parent) blocks the task at once with the marker's text as the
// reason, once; the task session working on it gets the pause interrupt.
func TestBlockFromChat(t *testing.T) {
	for _, proto := range revisions {
		t.Run(proto, func(t *testing.T) {
			p := newProject(t)
			work := p.taskInProgress("coder", "login")
			ts := p.connect(proto)
			task := p.authenticate(ts, "coder", "task")
			cs := p.connect(proto)
			chat := p.authenticate(cs, "coder", "chat")
			refusedMarker(t, p, cs, chat, "report_block_from_chat", "task_block_marker_required", "@@ブロック報告:",
				map[string]any{"task_id": work.ID, "reason": "@@ブロック報告: in the argument"})

			p.deliver(cs, chat, "lead", "＠＠ブロック報告：API キー待ち")
			r := call(t, cs, "report_block_from_chat", map[string]any{"session_token": chat})
			if r.isError || r.str("change_status") != "applied" || !strings.Contains(r.str("instruction"), "Tell lead") {
				t.Fatalf("report_block_from_chat: %s", r.text)
			}
			if got, _ := p.store.Task(work.ID); got.Status != fsstore.StatusBlocked || got.BlockedReason != "API キー待ち" || got.StatusChangedBy != "lead" {
				t.Fatalf("blocked task: %+v", got)
			}
			if again := call(t, cs, "report_block_from_chat", map[string]any{"session_token": chat}); again.code() != "marker_already_used" {
				t.Fatalf("second report_block_from_chat: %s", again.text)
			}
			checkPaused(t, ts, task, "API キー待ち")
		})
	}
}

// checkPaused: the task session's next call is replaced by a pause
// interrupt that gives reason and tells it to report blocked.
func checkPaused(t *testing.T, ts *mcp.ClientSession, token, reason string) {
	t.Helper()
	r := call(t, ts, "get_task", map[string]any{"session_token": token})
	if !r.isError || !strings.Contains(r.text, reason) || !strings.Contains(r.text, `report_completed(result="blocked"`) {
		t.Fatalf("task session after the block: %s", r.text)
	}
	r = call(t, ts, "get_notifications", map[string]any{"session_token": token, "mark_as_read": false})
	notes, _ := r.data["notifications"].([]any)
	if len(notes) != 1 || notes[0].(map[string]any)["action"] != "pause" {
		t.Fatalf("task session's notifications: %s", r.text)
	}
}

// @@ブロック報告 from someone without authority over the task (reviewer, a
// peer) only asks: the task stays in progress, nobody is interrupted, the
// sender is told (the instruction) and lead asked; lead's approval blocks
// it with the reported reason and interrupts the task session then. A task
// that cannot become blocked is refused at once, and the marker is unused.
func TestBlockFromChatAuthority(t *testing.T) {
	p := newProject(t)
	ctx := context.Background()
	work := p.taskInProgress("coder", "login")
	ts := p.connect("")
	task := p.authenticate(ts, "coder", "task")
	cs := p.connect("")
	chat := p.authenticate(cs, "coder", "chat")

	backlog, err := p.store.CreateTask(ctx, p.cfg, fsstore.NewTask{Title: "later", Assignee: "coder", Requester: "lead", Status: fsstore.StatusBacklog})
	if err != nil {
		t.Fatal(err)
	}
	p.deliver(cs, chat, "lead", "@@ブロック報告: stuck")
	before := p.tree()
	if r := call(t, cs, "report_block_from_chat", map[string]any{"session_token": chat, "task_id": backlog.ID}); r.code() != "invalid_transition" {
		t.Fatalf("block a backlog task: %s", r.text)
	}
	if r := call(t, cs, "report_block_from_chat", map[string]any{"session_token": chat, "task_id": work.ID, "reason": " "}); r.code() != "reason_required" {
		t.Fatalf("block with a blank reason: %s", r.text)
	}
	if p.tree() != before {
		t.Fatal("refused report_block_from_chat changed files")
	}

	p.deliver(cs, chat, "reviewer", "@@ブロック報告: reviewer says the spec is unclear")
	r := call(t, cs, "report_block_from_chat", map[string]any{"session_token": chat, "task_id": work.ID})
	if r.isError || r.str("change_status") != "pending_approval" || !strings.Contains(r.str("instruction"), "Tell reviewer") {
		t.Fatalf("reviewer's block: %s", r.text)
	}
	got, _ := p.store.Task(work.ID)
	if got.Status != fsstore.StatusInProgress || got.PendingChange == nil || got.PendingChange.Reason != "reviewer says the spec is unclear" {
		t.Fatalf("after reviewer's block: %+v", got)
	}
	if notes := notificationLines(t, p, "coder"); len(notes) != 0 {
		t.Fatalf("a pending block interrupted: %+v", notes)
	}
	if msgs := chatLines(t, p, "lead"); !strings.Contains(msgs[len(msgs)-1].Content, "aipm task approve "+work.ID) {
		t.Fatalf("lead was not asked: %+v", msgs[len(msgs)-1])
	}
	if _, _, err := p.store.Decide(ctx, p.cfg, work.ID, "lead", fsstore.ApprovalApproved, ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := p.store.Task(work.ID); got.Status != fsstore.StatusBlocked || got.BlockedReason != "reviewer says the spec is unclear" || got.PendingChange != nil {
		t.Fatalf("after lead's approval: %+v", got)
	}
	checkPaused(t, ts, task, "reviewer says the spec is unclear")
}

// @@完了報告 through real aipm serve processes: refused without the marker
// in ordinary received text; with it, from lead, the report reaches only
// coder's task session (a notification about the task: its chat session
// never sees it), the task stays in progress, and the task session's
// get_next_action tells it to decide. One use per marker; a task not in
// progress is refused.
func TestCompletionFromChat(t *testing.T) {
	for _, proto := range revisions {
		t.Run(proto, func(t *testing.T) {
			p := newProject(t)
			work := p.taskInProgress("coder", "login")
			ts := p.connect(proto)
			task := p.authenticate(ts, "coder", "task")
			cs := p.connect(proto)
			chat := p.authenticate(cs, "coder", "chat")
			refusedMarker(t, p, cs, chat, "report_completion_from_chat", "task_completion_marker_required", "@@完了報告",
				map[string]any{"task_id": work.ID, "summary": "@@完了報告 in the argument"})

			p.deliver(cs, chat, "lead", "@@完了報告: テスト通過")
			r := call(t, cs, "report_completion_from_chat", map[string]any{"session_token": chat})
			if r.isError || r.str("report_status") != "passed_on" || r.str("notification_id") == "" {
				t.Fatalf("report_completion_from_chat: %s", r.text)
			}
			if again := call(t, cs, "report_completion_from_chat", map[string]any{"session_token": chat}); again.code() != "marker_already_used" {
				t.Fatalf("second report_completion_from_chat: %s", again.text)
			}
			if got, _ := p.store.Task(work.ID); got.Status != fsstore.StatusInProgress {
				t.Fatalf("a completion report changed the status: %+v", got)
			}
			checkReportOnlyForTaskSession(t, cs, chat, ts, task, "テスト通過")
		})
	}
}

// checkReportOnlyForTaskSession: the chat session has no notification; the
// task session's get_next_action (work) tells it to decide on the report
// holding want, and its get_notifications returns it.
func checkReportOnlyForTaskSession(t *testing.T, cs *mcp.ClientSession, chat string, ts *mcp.ClientSession, task, want string) {
	t.Helper()
	if r := call(t, cs, "get_notifications", map[string]any{"session_token": chat, "mark_as_read": false}); len(r.data["notifications"].([]any)) != 0 {
		t.Fatalf("the chat session sees the completion report: %s", r.text)
	}
	r := call(t, ts, "get_next_action", map[string]any{"session_token": task})
	if in := r.str("instruction"); r.str("action") != "work" || !strings.Contains(in, want) || !strings.Contains(in, "decide on a completion report") || !strings.Contains(in, `report_completed(result="success"`) {
		t.Fatalf("task session's get_next_action: %s", r.text)
	}
	r = call(t, ts, "get_notifications", map[string]any{"session_token": task})
	notes, _ := r.data["notifications"].([]any)
	if len(notes) != 1 || !strings.Contains(notes[0].(map[string]any)["message"].(string), want) || notes[0].(map[string]any)["action"] != "decide" {
		t.Fatalf("task session's notifications: %s", r.text)
	}
	if r := call(t, ts, "get_next_action", map[string]any{"session_token": task}); strings.Contains(r.str("instruction"), "completion report") {
		t.Fatalf("a read completion report is repeated: %s", r.text)
	}
}

// @@完了報告 from someone without authority (reviewer) waits for approval:
// nothing reaches the task session until lead approves; then exactly one
// report does. A task not in progress is refused, the marker unused.
func TestCompletionFromChatAuthority(t *testing.T) {
	p := newProject(t)
	ctx := context.Background()
	work := p.taskInProgress("coder", "login")
	ts := p.connect("")
	task := p.authenticate(ts, "coder", "task")
	cs := p.connect("")
	chat := p.authenticate(cs, "coder", "chat")
	todo, err := p.store.CreateTask(ctx, p.cfg, fsstore.NewTask{Title: "later", Assignee: "coder", Requester: "lead", Status: fsstore.StatusTodo})
	if err != nil {
		t.Fatal(err)
	}

	p.deliver(cs, chat, "reviewer", "＠＠完了報告 looks done to me")
	before := p.tree()
	if r := call(t, cs, "report_completion_from_chat", map[string]any{"session_token": chat, "task_id": todo.ID}); r.code() != "task_not_in_progress" {
		t.Fatalf("report on a todo task: %s", r.text)
	}
	if p.tree() != before {
		t.Fatal("refused report_completion_from_chat changed files")
	}
	r := call(t, cs, "report_completion_from_chat", map[string]any{"session_token": chat})
	if r.isError || r.str("report_status") != "pending_approval" || !strings.Contains(r.str("instruction"), "Tell reviewer") {
		t.Fatalf("reviewer's report: %s", r.text)
	}
	if notes := notificationLines(t, p, "coder"); len(notes) != 0 {
		t.Fatalf("a pending report reached the task session: %+v", notes)
	}
	if got, _ := p.store.Task(work.ID); got.PendingChange == nil || got.PendingChange.Summary != "looks done to me" {
		t.Fatalf("pending report: %+v", got)
	}
	if _, _, err := p.store.Decide(ctx, p.cfg, work.ID, "lead", fsstore.ApprovalApproved, ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := p.store.Task(work.ID); got.Status != fsstore.StatusInProgress || got.PendingChange != nil {
		t.Fatalf("after approval: %+v", got)
	}
	checkReportOnlyForTaskSession(t, cs, chat, ts, task, "looks done to me")
	if notes := notificationLines(t, p, "coder"); len(notes) != 1 || notes[0].From != "reviewer" {
		t.Fatalf("notifications after approval: %+v", notes)
	}
}

// @@タスク確認 authorizes no operation: the get_pending_messages answer
// holding it (in ordinary text) tells the model to read its tasks with
// list_tasks and answer the sender with respond_chat; anyone may ask. A
// marker in code asks nothing.
func TestTaskCheckMarker(t *testing.T) {
	p := newProject(t)
	p.taskInProgress("coder", "login")
	cs := p.connect("")
	chat := p.authenticate(cs, "coder", "chat")
	const asks = "asks for the state of your tasks"
	for _, c := range []struct {
		from, text string
		want       bool
	}{
		{"reviewer", "@@タスク確認", true},
		{"lead", "＠＠タスク確認: blocked ones?", true},
		{"lead", "write `@@タスク確認` to ask", false},
		{"lead", "@@タスク確認済み", false},
	} {
		p.send(c.from, "coder", c.text)
		// get_next_action names the marker; get_pending_messages explains it
		if in := call(t, cs, "get_next_action", map[string]any{"session_token": chat}).str("instruction"); strings.Contains(in, asks) != c.want {
			t.Fatalf("%q: get_next_action's instruction %q", c.text, in)
		}
		r := call(t, cs, "get_pending_messages", map[string]any{"session_token": chat})
		in := r.str("instruction")
		if got := strings.Contains(in, asks); got != c.want {
			t.Fatalf("%q: instruction %q", c.text, in)
		}
		if c.want && (!strings.Contains(in, "call list_tasks") || !strings.Contains(in, "answer "+c.from+" with respond_chat")) {
			t.Fatalf("%q: instruction %q", c.text, in)
		}
	}
	if r := call(t, cs, "list_tasks", map[string]any{"session_token": chat, "assignee": "coder"}); r.isError || !strings.Contains(r.text, "login") {
		t.Fatalf("list_tasks: %s", r.text)
	}
	// Every other marker's message names its tool.
	p.send("lead", "coder", "@@ブロック報告: x @@完了報告")
	if in := call(t, cs, "get_next_action", map[string]any{"session_token": chat}).str("instruction"); !strings.Contains(in, "call report_block_from_chat") || !strings.Contains(in, "call report_completion_from_chat") {
		t.Fatalf("get_next_action's instruction for two markers: %q", in)
	}
	r := call(t, cs, "get_pending_messages", map[string]any{"session_token": chat})
	if in := r.str("instruction"); !strings.Contains(in, "call report_block_from_chat") || !strings.Contains(in, "call report_completion_from_chat") {
		t.Fatalf("instruction for two markers: %q", in)
	}
}
