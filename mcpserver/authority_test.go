package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"aipm/fsstore"
	"aipm/hook"
	"aipm/internal/fixtures"
)

// Who may stop, resume, end and decide (DESIGN section 11, "A human's stop
// is final"), with real aipm serve processes and the SDK's client.

// aipmOut runs the aipm binary on the project and returns its stdout,
// failing the test if it fails.
func (p *project) aipmOut(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(aipmBin, append([]string{"--dir", p.store.ProjectDir()}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("aipm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// unreadNotifications is what aipm status says of agent's unread
// notifications.
func (p *project) unreadNotifications(t *testing.T, agent string) int {
	t.Helper()
	var st struct {
		Agents []struct {
			ID                  string `json:"id"`
			UnreadNotifications int    `json:"unreadNotifications"`
		} `json:"agents"`
	}
	if err := json.Unmarshal([]byte(p.aipmOut(t, "status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	for _, a := range st.Agents {
		if a.ID == agent {
			return a.UnreadNotifications
		}
	}
	t.Fatalf("aipm status lists no agent %s", agent)
	return 0
}

// task reads task id as it is now.
func (p *project) task(t *testing.T, id string) fsstore.Task {
	t.Helper()
	task, err := p.store.Task(id)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// An aipm interrupt --task stops the task session on that task like any
// interrupt, while the task stays in progress: its next tool call is
// replaced, and the PreToolUse hook refuses other tools (issue 34, item 1).
func TestTaskInterruptReplaces(t *testing.T) {
	p := newProject(t)
	task := p.taskInProgress("coder", "Fix login")
	cs := p.connect("")
	token := p.authenticate(cs, "coder", "task")
	out := p.aipmOut(t, "interrupt", "coder", "wrong approach", "--task", task.ID, "--as", "lead")
	if want := "queued an interrupt for coder's task session on " + task.ID; !strings.Contains(out, want) {
		t.Fatalf("aipm interrupt --task said %q; want %q", out, want)
	}
	r := call(t, cs, "get_task", map[string]any{"session_token": token})
	if !r.isError || !strings.HasPrefix(r.text, "INTERRUPT (get_task did not run)") || !strings.Contains(r.text, "wrong approach") {
		t.Fatalf("get_task after aipm interrupt --task: %s", r.text)
	}
	got := p.runHook("claude", "coder", "task", hook.PreToolUse, "Bash")
	if !strings.Contains(got, `"permissionDecision":"deny"`) || !strings.Contains(got, "wrong approach") {
		t.Fatalf("PreToolUse after aipm interrupt --task: %q", got)
	}
	if st := p.task(t, task.ID).Status; st != fsstore.StatusInProgress {
		t.Fatalf("the task is %s; an interrupt changes no status", st)
	}
	if r := call(t, cs, "report_completed", map[string]any{"session_token": token, "result": "blocked", "summary": "stopped"}); r.isError {
		t.Fatalf("report_completed after the interrupt: %s", r.text)
	}
}

// A task a human set to blocked or cancelled leaves that status only by a
// human's change, or a marker with a human's authority: the agent's own
// update_task_status cannot lift it, and get_next_action never answers
// work for it (issue 34, item 2). A stop made by hand is a human's too.
func TestHumanStopIsFinal(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, status, lift string
		hand               bool
	}{
		{"blocked", fsstore.StatusBlocked, fsstore.StatusInProgress, false},
		{"cancelled", fsstore.StatusCancelled, fsstore.StatusTodo, false},
		{"blocked by hand", fsstore.StatusBlocked, fsstore.StatusInProgress, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProject(t)
			task := p.taskInProgress("coder", "Fix login")
			cs := p.connect("")
			token := p.authenticate(cs, "coder", "task")
			if tc.hand {
				fix := fixtures.Of(p.store)
				if err := fix.HandEdit(fsstore.Tasks, task.ID, func(doc map[string]any) { doc["status"] = tc.status }); err != nil {
					t.Fatal(err)
				}
			} else if _, err := p.store.UpdateTask(ctx, p.cfg, task.ID, "lead", fsstore.TaskChange{Status: tc.status, Reason: "plans changed"}); err != nil {
				t.Fatal(err)
			}
			var before string
			for i := range 2 {
				r := call(t, cs, "update_task_status", map[string]any{"session_token": token, "status": tc.lift})
				if r.code() != "stopped_by_human" || !strings.Contains(r.text, "only a human") {
					t.Fatalf("the agent lifting a human's stop: %s", r.text)
				}
				// The first refusal's line tells the interrupt; then nothing changes.
				if i == 1 && p.tree() != before {
					t.Fatal("the refused update_task_status changed files")
				}
				before = p.tree()
			}
			if st := p.task(t, task.ID).Status; st != tc.status {
				t.Fatalf("after the refusal the task is %s; want %s", st, tc.status)
			}
			if r := call(t, cs, "get_next_action", map[string]any{"session_token": token, "wait_seconds": 1}); r.str("action") == "work" {
				t.Fatalf("get_next_action under a human's stop: %s", r.text)
			}
			// The human lifts it.
			p.aipmOut(t, "task", "status", task.ID, tc.lift, "--as", "lead")
			if st := p.task(t, task.ID).Status; st != tc.lift {
				t.Fatalf("after lead's change the task is %s; want %s", st, tc.lift)
			}
		})
	}
	// A marker with a human's authority lifts it too: lead's @@タスク開始.
	p := newProject(t)
	task := p.taskInProgress("coder", "Fix login")
	if _, err := p.store.UpdateTask(ctx, p.cfg, task.ID, "lead", fsstore.TaskChange{Status: fsstore.StatusBlocked, Reason: "wait"}); err != nil {
		t.Fatal(err)
	}
	cs := p.connect("")
	chat := p.authenticate(cs, "coder", "chat")
	p.deliver(cs, chat, "lead", "@@タスク開始: "+task.ID)
	if r := call(t, cs, "start_task_from_chat", map[string]any{"session_token": chat, "task_id": task.ID}); r.isError {
		t.Fatalf("lead's @@タスク開始 on the task lead blocked: %s", r.text)
	}
	if st := p.task(t, task.ID).Status; st != fsstore.StatusInProgress {
		t.Fatalf("after lead's marker the task is %s", st)
	}
}

// A delegation ends when its task ends, whatever ends it: the task
// session's own report (done, or blocked) leaves no delegation pending for
// ever (issue 34, item 3).
func TestDelegationEndsWithItsTask(t *testing.T) {
	for _, result := range []string{"success", "blocked"} {
		t.Run(result, func(t *testing.T) {
			p := newProject(t)
			task := p.taskInProgress("coder", "Fix login")
			cs := p.connect("")
			token := p.authenticate(cs, "coder", "task")
			r := call(t, cs, "delegate_to_chat_session", map[string]any{"session_token": token, "target_agent_id": "reviewer", "purpose": "ask for a review"})
			if r.isError {
				t.Fatal(r.text)
			}
			id := r.str("delegation_id")
			if r := call(t, cs, "report_completed", map[string]any{"session_token": token, "result": result, "summary": "finished"}); r.isError {
				t.Fatal(r.text)
			}
			ds, err := p.store.Delegations().List(fsstore.DelegationFilter{TaskIDs: []string{task.ID}})
			if err != nil || len(ds) != 1 || ds[0].ID != id {
				t.Fatalf("delegations of the task: %v, %v", ds, err)
			}
			if d := ds[0]; d.Status != fsstore.DlgFailed || !strings.Contains(d.Result, "ended with its task") {
				t.Fatalf("after report_completed(%s) the delegation is %s (%q); want failed, ended with its task", result, d.Status, d.Result)
			}
		})
	}
}

// An interrupt shown whole (a replaced answer, a PreToolUse hook) is read
// once the session makes a call that complies (report_completed, logout,
// get_notifications, update_task_status): an agent that obeys it without
// get_notifications leaves nothing unread (issue 34, item 4), and one that
// does not is still stopped. A notification before it is shown with it,
// so it is read too.
func TestShownInterruptIsRead(t *testing.T) {
	ctx := context.Background()
	for _, via := range []string{"answer", "hook"} {
		t.Run(via, func(t *testing.T) {
			p := newProject(t)
			task := p.taskInProgress("coder", "Fix login")
			cs := p.connect("")
			token := p.authenticate(cs, "coder", "task")
			if _, err := p.store.FromChat().NotifyTaskSession(ctx, "coder", "reviewer", "the tests are flaky", task.ID); err != nil {
				t.Fatal(err)
			}
			interrupt(t, p, task.ID)
			if n := p.unreadNotifications(t, "coder"); n != 2 {
				t.Fatalf("before: %d unread; want 2", n)
			}
			switch via {
			case "answer":
				r := call(t, cs, "get_task", map[string]any{"session_token": token})
				if !strings.HasPrefix(r.text, "INTERRUPT") || !strings.Contains(r.text, "requirements changed") || !strings.Contains(r.text, "the tests are flaky") {
					t.Fatalf("replaced answer: %s", r.text)
				}
			case "hook":
				got := p.runHook("claude", "coder", "task", hook.PreToolUse, "Bash")
				if !strings.Contains(got, `"permissionDecision":"deny"`) || !strings.Contains(got, "requirements changed") || !strings.Contains(got, "the tests are flaky") {
					t.Fatalf("PreToolUse: %q", got)
				}
			}
			// Shown, read by a call that complies: until then the hook still
			// refuses, and a call that does not comply is still replaced.
			if got := p.runHook("claude", "coder", "task", hook.PreToolUse, "Bash"); !strings.Contains(got, `"permissionDecision":"deny"`) {
				t.Fatalf("PreToolUse before the next call: %q", got)
			}
			if r := call(t, cs, "get_task", map[string]any{"session_token": token}); !strings.HasPrefix(r.text, "INTERRUPT (get_task did not run)") {
				t.Fatalf("a call that does not comply, after the interrupt was shown: %s", r.text)
			}
			if n := p.unreadNotifications(t, "coder"); n != 2 {
				t.Fatalf("shown, not yet complied with: %d unread; want 2", n)
			}
			if r := call(t, cs, "report_completed", map[string]any{"session_token": token, "result": "blocked", "summary": "stopped"}); r.isError {
				t.Fatal(r.text)
			}
			if n := p.unreadNotifications(t, "coder"); n != 0 {
				t.Fatalf("after the interrupt was shown and obeyed: %d unread; want 0", n)
			}
		})
	}
}

// Only the humans a pending task asked decide it: a manager nobody asked
// cannot approve a request_task (issue 34, item 5).
func TestOnlyTheAskedApprove(t *testing.T) {
	p := newProject(t)
	addBossAndGuest(t, p)
	cs := p.connect("")
	chat := p.authenticate(cs, "coder", "chat")
	p.deliver(cs, chat, "guest", "@@タスク作成: a wish of guest")
	r := call(t, cs, "request_task", map[string]any{"session_token": chat})
	if r.isError {
		t.Fatal(r.text)
	}
	asked, _ := r.data["asked_to_approve"].([]any)
	if len(asked) != 1 || asked[0] != "boss" {
		t.Fatalf("asked_to_approve %v; want [boss]", asked)
	}
	id := r.data["task"].(map[string]any)["id"].(string)
	before := p.tree()
	cmd := exec.Command(aipmBin, "--dir", p.store.ProjectDir(), "task", "approve", id, "--as", "lead")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "lead may not approve or reject task "+id) || !strings.Contains(string(out), "ask boss") {
		t.Fatalf("lead (a manager, not asked) approving: %v %s", err, out)
	}
	if p.tree() != before {
		t.Fatal("the refused approval changed files")
	}
	p.aipmOut(t, "task", "approve", id, "--as", "boss")
	if a := p.task(t, id).ApprovalStatus; a != fsstore.ApprovalApproved {
		t.Fatalf("after boss approved: %s", a)
	}
}

// An agent reports; it never cancels: report_completed(result="cancelled")
// answers only a cancel interrupt, and update_task_status cannot cancel
// the agent's task either (issue 34, item 6).
func TestAgentNeverCancels(t *testing.T) {
	p := newProject(t)
	task := p.taskInProgress("coder", "Fix login")
	cs := p.connect("")
	token := p.authenticate(cs, "coder", "task")
	before := p.tree()
	r := call(t, cs, "report_completed", map[string]any{"session_token": token, "result": "cancelled", "summary": "dropping it"})
	if r.code() != "invalid_result" || !strings.Contains(r.text, "nobody cancelled it") {
		t.Fatalf("report_completed(cancelled) on a task nobody cancelled: %s", r.text)
	}
	r = call(t, cs, "update_task_status", map[string]any{"session_token": token, "status": "cancelled", "reason": "not worth it"})
	if r.code() != "invalid_transition" || !strings.Contains(r.text, "never cancels") {
		t.Fatalf("update_task_status(cancelled) by the assignee: %s", r.text)
	}
	if p.tree() != before {
		t.Fatal("a refused cancel changed files")
	}
	if st := p.task(t, task.ID).Status; st != fsstore.StatusInProgress {
		t.Fatalf("the task is %s", st)
	}
	// A cancel interrupt is answered with it.
	if _, err := p.store.UpdateTask(context.Background(), p.cfg, task.ID, "lead", fsstore.TaskChange{Status: fsstore.StatusCancelled, Reason: "dropped"}); err != nil {
		t.Fatal(err)
	}
	if r := call(t, cs, "report_completed", map[string]any{"session_token": token, "result": "cancelled", "summary": "dropped"}); r.isError {
		t.Fatalf("report_completed(cancelled) answering a cancel: %s", r.text)
	}
}

// A turn of a conversation of two is counted only when it was written, as
// a group's is (issue 34, item 7): the receiver's log refused, the turn is
// still the sender's to send.
func TestTurnNotWrittenNotCounted(t *testing.T) {
	p := newProject(t)
	c, _, err := p.store.Conversations().Start(context.Background(), p.cfg, fsstore.NewConversation{From: "coder", To: "reviewer"})
	if err != nil {
		t.Fatal(err)
	}
	cs := p.connect("")
	token := p.authenticate(cs, "coder", "chat")
	path, _ := p.store.ChatPath("reviewer")
	if err := os.MkdirAll(strings.TrimSuffix(path, "/chat.jsonl"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".elsewhere", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(path+".elsewhere", path); err != nil {
		t.Fatal(err)
	}
	send := func() result {
		return call(t, cs, "send_conversation_message", map[string]any{"session_token": token, "conversation_id": c.ID, "content": "first turn"})
	}
	if r := send(); !r.isError {
		t.Fatalf("a turn into a symbolic link was written: %s", r.text)
	}
	var doc fsstore.Conversation
	p.doc(t, fsstore.Conversations, c.ID, &doc)
	if doc.Turns != 0 {
		t.Fatalf("the unwritten turn was counted: %d turns", doc.Turns)
	}
	os.Remove(path)
	if r := send(); r.isError {
		t.Fatalf("the turn sent again: %s", r.text)
	}
	p.doc(t, fsstore.Conversations, c.ID, &doc)
	if doc.Turns != 1 {
		t.Fatalf("after the turn was written: %d turns; want 1", doc.Turns)
	}
}

// A reason goes with blocked or cancelled only, over MCP as in the CLI and
// the board: one rule (issue 34, item 8).
func TestStatusReasonRule(t *testing.T) {
	p := newProject(t)
	task := p.taskInProgress("coder", "Fix login")
	cs := p.connect("")
	token := p.authenticate(cs, "coder", "task")
	before := p.tree()
	r := call(t, cs, "update_task_status", map[string]any{"session_token": token, "status": "todo", "reason": "x"})
	if !r.isError || !strings.Contains(r.text, "a reason goes with blocked or cancelled, not todo") {
		t.Fatalf("update_task_status(todo, reason): %s", r.text)
	}
	if p.tree() != before {
		t.Fatal("the refused change wrote files")
	}
	if st := p.task(t, task.ID).Status; st != fsstore.StatusInProgress {
		t.Fatalf("the task is %s", st)
	}
}

// Ending a conversation that already ended is an error that says so, and
// changes nothing (issue 34, item 10).
func TestEndEndedConversation(t *testing.T) {
	p := newProject(t)
	c, _, err := p.store.Conversations().Start(context.Background(), p.cfg, fsstore.NewConversation{From: "coder", To: "reviewer"})
	if err != nil {
		t.Fatal(err)
	}
	cs := p.connect("")
	token := p.authenticate(cs, "coder", "chat")
	end := func() result {
		return call(t, cs, "end_conversation", map[string]any{"session_token": token, "conversation_id": c.ID})
	}
	if r := end(); r.isError {
		t.Fatal(r.text)
	}
	// told of its end: ended once reviewer is told too
	call(t, cs, "get_next_action", map[string]any{"session_token": token, "wait_seconds": 1})
	for range 2 {
		before := p.tree()
		r := end()
		if r.code() != "conversation_not_active" || !strings.Contains(r.text, "already ended") || strings.Contains(r.text, "will be told") {
			t.Fatalf("ending it again: %s", r.text)
		}
		if p.tree() != before {
			t.Fatal("ending an ended conversation changed files")
		}
	}
}
