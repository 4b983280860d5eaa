package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// Seed 003's test table, through a real aipm serve: a human sends coder a
// message, then coder's chat session calls a tool. The marker must be in
// the latest message coder received, not in the tool's arguments; one
// marked message authorizes one operation; a refusal changes nothing.
func TestChatCommandMarkers(t *testing.T) {
	p := newProject(t)
	ctx := context.Background()
	addBossAndGuest(t, p)
	cs := p.connect("")
	token := p.authenticate(cs, "coder", "chat")
	approved, err := p.store.CreateTask(ctx, p.cfg, fsstore.NewTask{Title: "approved backlog task", Assignee: "coder", Requester: "lead", Status: fsstore.StatusBacklog})
	if err != nil {
		t.Fatal(err)
	}
	pending, err := p.store.CreateTask(ctx, p.cfg, fsstore.NewTask{Title: "waits for approval", Assignee: "coder", Requester: "guest", Status: fsstore.StatusBacklog, NeedsApproval: true})
	if err != nil {
		t.Fatal(err)
	}
	inProgress := p.taskInProgress("coder", "current work")

	for _, tc := range []markerCase{
		{"create/half-width", "lead", "@@タスク作成: ログイン機能を実装", "request_task", map[string]any{"title": "ログイン機能を実装"}, ""},
		{"create/absent", "lead", "ログイン機能を作ってください", "request_task", map[string]any{"title": "ログイン機能"}, "task_request_marker_required"},
		{"create/full-width", "lead", "＠＠タスク作成: 全角", "request_task", map[string]any{}, ""},
		{"create/mixed @＠", "lead", "@＠タスク作成: 混合1", "request_task", map[string]any{"title": "混合1"}, ""},
		{"create/mixed ＠@", "lead", "＠@タスク作成: 混合2", "request_task", map[string]any{"title": "混合2"}, ""},
		{"create/marker only in the argument", "lead", "作ってくれる？", "request_task", map[string]any{"title": "@@タスク作成: 引数", "description": "@@タスク作成: x"}, "task_request_marker_required"},
		{"create/another marker", "lead", "@@タスク通知: not a request", "request_task", map[string]any{"title": "x"}, "task_request_marker_required"},
		{"notify/present", "lead", "@@タスク通知: 仕様を変更しました", "notify_task_session", map[string]any{"message": "仕様を変更しました"}, ""},
		{"notify/absent", "lead", "仕様を変更しました", "notify_task_session", map[string]any{"message": "@@タスク通知: 仕様"}, "task_notify_marker_required"},
		{"notify/full-width", "lead", "＠＠タスク通知: 全角", "notify_task_session", map[string]any{}, ""},
		{"adjust/present", "lead", "@@タスク調整: 説明を更新", "update_task_from_chat", map[string]any{"task_id": approved.ID, "description": "認証機能の改善"}, ""},
		{"adjust/absent", "lead", "説明を更新して", "update_task_from_chat", map[string]any{"task_id": approved.ID, "description": "x"}, "task_adjust_marker_required"},
		{"adjust/mixed", "lead", "＠@タスク調整: todo にして", "update_task_from_chat", map[string]any{"task_id": approved.ID, "status": "todo"}, ""},
		{"adjust/no bypass of the transitions", "lead", "@@タスク調整: done にして", "update_task_from_chat", map[string]any{"task_id": approved.ID, "status": "done"}, "invalid_transition"},
		{"adjust/a block goes through its own marker", "lead", "@@タスク調整: blocked にして", "update_task_from_chat", map[string]any{"task_id": approved.ID, "status": "blocked"}, "reason_required"},
		{"adjust/pending approval", "lead", "@@タスク調整: 説明", "update_task_from_chat", map[string]any{"task_id": pending.ID, "description": "x"}, "task_pending_approval"},
		{"start/absent", "lead", "始めて", "start_task_from_chat", map[string]any{"task_id": approved.ID}, "task_start_marker_required"},
		{"start/pending approval", "lead", "@@タスク開始: それ", "start_task_from_chat", map[string]any{"task_id": pending.ID}, "task_pending_approval"},
		{"start/full-width", "lead", "＠＠タスク開始: それ", "start_task_from_chat", map[string]any{"task_id": approved.ID}, ""},
		{"start/not mine", "lead", "@@タスク開始: reviewer's", "start_task_from_chat", map[string]any{"task_id": "tsk_01M7YZWACRA0328GMTHNDHB18Z"}, "task_not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, p, cs, token) })
	}
	checkMarkerEffects(t, p, approved.ID, inProgress.ID)
}

// markerCase is a message to coder's chat session and the marker tool
// called after it.
type markerCase struct {
	name, from, message, tool string
	args                      map[string]any
	code                      string // "" for success
}

// run sends the message, calls the tool, and checks that a refusal changed
// nothing and that a success cannot be repeated with the same message.
func (tc markerCase) run(t *testing.T, p *project, cs *mcp.ClientSession, token string) {
	p.deliver(cs, token, tc.from, tc.message)
	before := p.tree()
	args := map[string]any{"session_token": token}
	for k, v := range tc.args {
		args[k] = v
	}
	r := call(t, cs, tc.tool, args)
	if r.code() != tc.code {
		t.Fatalf("%s after %q: got %q, want code %q", tc.tool, tc.message, r.text, tc.code)
	}
	if tc.code != "" {
		if p.tree() != before {
			t.Fatalf("refused %s changed files", tc.tool)
		}
		return
	}
	// The same marked message cannot authorize a second operation.
	again := call(t, cs, tc.tool, args)
	if again.code() != "marker_already_used" {
		t.Fatalf("second %s with the same message: %s", tc.tool, again.text)
	}
}

// checkMarkerEffects: what the successful calls of TestChatCommandMarkers
// did: the tasks created, the task adjusted and started, the notes passed.
func checkMarkerEffects(t *testing.T, p *project, approved, inProgress string) {
	t.Helper()
	tasks, _, _, _ := p.store.Tasks(fsstore.TaskFilter{Assignee: "coder"})
	titles := map[string]fsstore.Task{}
	for _, tk := range tasks {
		titles[tk.Title] = tk
	}
	for _, title := range []string{"ログイン機能を実装", "全角", "混合1", "混合2"} {
		tk, ok := titles[title]
		if !ok || tk.Status != fsstore.StatusBacklog || tk.ApprovalStatus != fsstore.ApprovalApproved || tk.Requester != "lead" || tk.SourceMessageID == "" {
			t.Errorf("task %q: %+v", title, tk)
		}
	}
	if len(tasks) != 7 {
		t.Errorf("coder has %d tasks, want 7", len(tasks))
	}
	if got, _ := p.store.Task(approved); got.Description != "認証機能の改善" || got.Status != fsstore.StatusInProgress || got.StatusChangedBy != "lead" {
		t.Errorf("adjusted and started task: %+v", got)
	}
	notes := notificationLines(t, p, "coder")
	if len(notes) != 2 || notes[0].TaskID != inProgress || notes[0].From != "lead" || notes[1].Message != "全角" {
		t.Errorf("notifications for the task session: %+v", notes)
	}
}

// request_task's approval: a requester who is an ancestor of the agent
// approves at once; anyone else makes the task pending_approval, and the
// requester's human ancestors get a system chat message naming the
// commands; aipm task approve then lets it start.
func TestRequestTaskApproval(t *testing.T) {
	p := newProject(t)
	ctx := context.Background()
	addBossAndGuest(t, p)
	cs := p.connect("")
	token := p.authenticate(cs, "coder", "chat")

	send := func(from, content string) { p.deliver(cs, token, from, content) }
	send("lead", "@@タスク作成: from my parent")
	r := call(t, cs, "request_task", map[string]any{"session_token": token})
	if r.isError || r.str("approval_status") != "approved" {
		t.Fatalf("ancestor's request: %s", r.text)
	}
	send("guest", "@@タスク作成: from a guest")
	r = call(t, cs, "request_task", map[string]any{"session_token": token, "title": "guest's work"})
	asked, _ := r.data["asked_to_approve"].([]any)
	if r.isError || r.str("approval_status") != "pending_approval" || len(asked) != 1 || asked[0] != "boss" {
		t.Fatalf("non-ancestor's request: %s", r.text)
	}
	id := r.data["task"].(map[string]any)["id"].(string)
	checkAskedToApprove(t, p, id)
	// Pending approval: it cannot start, from chat or anywhere.
	send("guest", "@@タスク開始: it")
	if r := call(t, cs, "start_task_from_chat", map[string]any{"session_token": token, "task_id": id}); r.code() != "task_pending_approval" {
		t.Fatalf("start of a pending task: %s", r.text)
	}
	if _, err := p.store.UpdateTask(ctx, p.cfg, id, "boss", fsstore.TaskChange{Approval: fsstore.ApprovalApproved}); err != nil {
		t.Fatal(err)
	}
	if r := call(t, cs, "start_task_from_chat", map[string]any{"session_token": token, "task_id": id}); r.isError || r.data["task"].(map[string]any)["status"] != "in_progress" {
		t.Fatalf("start after approval: %s", r.text)
	}
	// In a task session the requester is the agent itself, not its own ancestor.
	ts := p.connect("")
	tt := p.authenticate(ts, "coder", "task")
	r = call(t, ts, "request_task", map[string]any{"session_token": tt, "title": "a subtask I need"})
	asked, _ = r.data["asked_to_approve"].([]any)
	if r.isError || r.str("approval_status") != "pending_approval" || len(asked) != 1 || asked[0] != "lead" {
		t.Fatalf("request_task from a task session: %s", r.text)
	}
}

// addBossAndGuest adds two humans: boss, and guest, whose parent is boss.
func addBossAndGuest(t *testing.T, p *project) {
	t.Helper()
	for _, a := range []fsstore.NewAgent{{ID: "boss", Type: fsstore.AgentHuman}, {ID: "guest", Type: fsstore.AgentHuman, Parent: "boss"}} {
		if _, err := p.store.AddAgent(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if p.cfg, err = p.store.LoadConfig(); err != nil {
		t.Fatal(err)
	}
}

// checkAskedToApprove: boss, guest's parent, got one system message asking
// to approve or reject task id, and lead was not asked.
func checkAskedToApprove(t *testing.T, p *project, id string) {
	t.Helper()
	msgs := chatLines(t, p, "boss")
	if len(msgs) != 1 || msgs[0].Kind != fsstore.KindSystem || msgs[0].SenderID != "system" || msgs[0].RelatedTaskID != id ||
		!strings.Contains(msgs[0].Content, "aipm task approve "+id) || !strings.Contains(msgs[0].Content, "aipm task reject "+id) {
		t.Fatalf("boss's chat: %+v", msgs)
	}
	if len(chatLines(t, p, "lead")) != 1 { // only lead's own sent message
		t.Fatalf("lead was asked to approve guest's task")
	}
}

// One marked message authorizes one operation across processes: two aipm
// serve processes, sharing coder's chat session, call request_task for the
// same message at once; exactly one creates a task each round.
// MARKER_RACES=N runs N rounds (default 10).
func TestMarkerRaceProcesses(t *testing.T) {
	p := newProject(t)
	a, b := p.connect(""), p.connect("")
	token := p.authenticate(a, "coder", "chat")
	rounds := envInt("MARKER_RACES", 10)
	for i := range rounds {
		p.deliver(a, token, "lead", fmt.Sprintf("@@タスク作成: round %d", i))
		start := make(chan struct{})
		results := make(chan result, 2)
		for _, cs := range []*mcp.ClientSession{a, b} {
			go func() {
				<-start
				results <- call(t, cs, "request_task", map[string]any{"session_token": token})
			}()
		}
		close(start)
		r1, r2 := <-results, <-results
		ok, used := 0, 0
		for _, r := range []result{r1, r2} {
			switch r.code() {
			case "":
				ok++
			case "marker_already_used":
				used++
			default:
				t.Fatalf("round %d: %s", i, r.text)
			}
		}
		if ok != 1 || used != 1 {
			t.Fatalf("round %d: %d created, %d refused as used: %s / %s", i, ok, used, r1.text, r2.text)
		}
	}
	tasks, _, _, _ := p.store.Tasks(fsstore.TaskFilter{Assignee: "coder"})
	if len(tasks) != rounds {
		t.Fatalf("%d tasks after %d rounds", len(tasks), rounds)
	}
}

// notificationLines reads an agent's notifications.jsonl as it is.
func notificationLines(t *testing.T, p *project, agent string) []fsstore.Notification {
	t.Helper()
	path, _ := p.store.NotificationsPath(agent)
	recs, bad, _, err := fsstore.ReadAll(path)
	if err != nil || len(bad) > 0 {
		t.Fatalf("%s: %v %v", path, err, bad)
	}
	var out []fsstore.Notification
	for _, r := range recs {
		var n fsstore.Notification
		if err := json.Unmarshal(r.Data, &n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// TestMarkerHelpOnlyWhenNeeded: the chat markers are explained to a chat
// session once, in authenticate's answer, then only in a get_pending_messages
// answer that returns a marked message (and always in help); never in an
// idle get_next_action answer, which a waiting session reads every 25
// seconds, nor to a task session.
func TestMarkerHelpOnlyWhenNeeded(t *testing.T) {
	const help = "Chat commands:"
	p := newProject(t)
	p.taskInProgress("coder", "marker help")
	cs := p.connect("")
	has := func(r result) bool { return strings.Contains(r.str("instruction"), help) }

	r := call(t, cs, "authenticate", map[string]any{"agent_id": "reviewer", "passkey": p.passkeys["reviewer"], "purpose": "chat"})
	if !has(r) || strings.Count(r.text, help) != 1 {
		t.Errorf("chat authenticate: marker help missing or repeated: %s", r.text)
	}
	chat := r.str("session_token")
	r = call(t, cs, "authenticate", map[string]any{"agent_id": "coder", "passkey": p.passkeys["coder"], "purpose": "task"})
	if has(r) {
		t.Errorf("task authenticate carries marker help: %s", r.text)
	}
	if r = call(t, cs, "get_next_action", map[string]any{"session_token": chat, "wait_seconds": 1}); r.str("action") != "wait_for_messages" || has(r) {
		t.Errorf("idle get_next_action: %s", r.text)
	}
	p.send("lead", "reviewer", "please look at the parser")
	if r = call(t, cs, "get_next_action", map[string]any{"session_token": chat}); r.str("action") != "get_pending_messages" || has(r) {
		t.Errorf("get_next_action with a message waiting: %s", r.text)
	}
	if r = call(t, cs, "get_pending_messages", map[string]any{"session_token": chat}); has(r) {
		t.Errorf("get_pending_messages with no marked message carries marker help: %s", r.text)
	}
	p.send("lead", "reviewer", "＠＠タスク作成: review the parser")
	if r = call(t, cs, "get_pending_messages", map[string]any{"session_token": chat}); !has(r) {
		t.Errorf("get_pending_messages with a marked message lacks marker help: %s", r.text)
	}
	if r = call(t, cs, "help", map[string]any{"session_token": chat}); !strings.Contains(r.str("markers"), help) {
		t.Errorf("help lacks the markers: %s", r.text)
	}
}
