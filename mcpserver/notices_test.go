package mcpserver_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// A notification addressed to a task waits for a session on that task
// (DESIGN section 6): `aipm interrupt --task A` and a @@タスク通知 note for
// A, queued while A is todo, are neither shown to nor consumed by the
// agent's session on task B, whatever it calls; A's next session is
// stopped by the interrupt and lists both. Real processes: the CLI, and
// aipm serve behind the SDK's client.
func TestTaskNotificationsWaitForTheirTask(t *testing.T) {
	p := newProject(t)
	ctx := context.Background()
	a, err := p.store.CreateTask(ctx, p.cfg, fsstore.NewTask{Title: "A", Assignee: "coder", Requester: "lead", Status: fsstore.StatusTodo})
	if err != nil {
		t.Fatal(err)
	}
	p.taskInProgress("coder", "B")
	cs := p.connect("")
	p.queueForTask(cs, a.ID)

	onB := p.authenticate(cs, "coder", "task")
	for _, tool := range []string{"get_notifications", "get_task", "get_notifications", "list_tasks"} {
		r := call(t, cs, tool, map[string]any{"session_token": onB})
		if r.isError || !strings.Contains(r.text, "notifications: none") || len(notes(r)) > 0 {
			t.Errorf("the session on task B, %s: %s", tool, r.text)
		}
	}
	if unread, err := p.store.UnreadNotificationIDs(ctx, "coder"); err != nil || len(unread) != 2 {
		t.Errorf("after B's session: %d unread (%v), want A's two", len(unread), err)
	}
	if r := call(t, cs, "report_completed", map[string]any{"session_token": onB, "result": "success", "summary": "B done"}); r.isError {
		t.Fatal(r.text)
	}

	if _, err := p.store.UpdateTask(ctx, p.cfg, a.ID, "lead", fsstore.TaskChange{Status: fsstore.StatusInProgress}); err != nil {
		t.Fatal(err)
	}
	onA := p.authenticate(cs, "coder", "task")
	if r := call(t, cs, "get_task", map[string]any{"session_token": onA}); !strings.HasPrefix(r.text, "INTERRUPT (get_task did not run)") || !strings.Contains(r.text, "stop A") {
		t.Fatalf("A's session, first call: %s", r.text)
	}
	checkTaskNotes(t, call(t, cs, "get_notifications", map[string]any{"session_token": onA}), a.ID)
	if r := call(t, cs, "report_completed", map[string]any{"session_token": onA, "result": "blocked", "summary": "stopped"}); r.isError {
		t.Fatal(r.text)
	}
	if unread, err := p.store.UnreadNotificationIDs(ctx, "coder"); err != nil || len(unread) != 0 {
		t.Fatalf("after A's session read them: %d unread (%v)", len(unread), err)
	}
	p.noReadJSONProblems()
}

// queueForTask queues, for coder's task id, an interrupt (aipm interrupt
// --task, a real CLI process) and a @@タスク通知 note (through coder's chat
// session, which then logs out).
func (p *project) queueForTask(cs *mcp.ClientSession, id string) {
	p.t.Helper()
	if out, err := exec.Command(aipmBin, "--dir", p.store.ProjectDir(), "interrupt", "coder", "stop A", "--task", id, "--as", "lead").CombinedOutput(); err != nil {
		p.t.Fatalf("aipm interrupt --task: %v: %s", err, out)
	}
	chat := p.authenticate(cs, "coder", "chat")
	p.deliver(cs, chat, "lead", "@@タスク通知: A's API changed")
	if r := call(p.t, cs, "notify_task_session", map[string]any{"session_token": chat, "message": "A's API changed", "related_task_id": id}); r.isError {
		p.t.Fatalf("notify_task_session: %s", r.text)
	}
	if r := call(p.t, cs, "logout", map[string]any{"session_token": chat}); r.isError {
		p.t.Fatal(r.text)
	}
}

// checkTaskNotes checks that get_notifications listed, newest first, the
// note and the interrupt queueForTask queued for task id, and nothing else.
func checkTaskNotes(t *testing.T, r result, id string) {
	t.Helper()
	ns := notes(r)
	if len(ns) != 2 {
		t.Fatalf("A's session lists %d notifications, want 2: %s", len(ns), r.text)
	}
	for _, n := range ns {
		if n["task_id"] != id {
			t.Errorf("A's session lists one about %v: %v", n["task_id"], n)
		}
	}
	if ns[0]["type"] != "info" || !strings.Contains(ns[0]["message"].(string), "A's API changed") || ns[1]["type"] != "interrupt" {
		t.Errorf("newest first, the note then the interrupt: %v", ns)
	}
}

// noReadJSONProblems fails the test if aipm doctor finds a read.json it
// does not understand.
func (p *project) noReadJSONProblems() {
	p.t.Helper()
	problems, err := p.store.Doctor(context.Background(), false)
	if err != nil {
		p.t.Fatal(err)
	}
	for _, pr := range problems {
		if strings.Contains(pr.Path, "read.json") {
			p.t.Errorf("doctor: %s: %s", pr.Path, pr.Reason)
		}
	}
}

// The notification line and get_notifications agree on the new_message
// notice (DESIGN section 6): a message past the notice's time to live is
// announced by neither (it stays unread, and get_pending_messages still
// delivers it).
func TestNewMessageTTLOneRule(t *testing.T) {
	p := newProject(t)
	cfgPath := filepath.Join(p.store.Root(), "config.toml")
	f, err := os.OpenFile(cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("\n[notifications.ttl]\nnew_message = \"1s\"\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	cs := p.connect("")
	chat := p.authenticate(cs, "coder", "chat")
	p.send("lead", "coder", "old news")
	sent := time.Now()
	for time.Since(sent) < 1500*time.Millisecond { // past its time to live, for good
		time.Sleep(100 * time.Millisecond)
	}
	for _, tool := range []string{"list_tasks", "get_notifications"} {
		r := call(t, cs, tool, map[string]any{"session_token": chat})
		if r.isError || !strings.Contains(r.text, "notifications: none") || strings.Contains(r.text, "new message") {
			t.Errorf("%s, the line: %s", tool, r.text)
		}
		for _, n := range notes(r) {
			t.Errorf("%s lists %v, which the line does not announce", tool, n)
		}
	}
	r := call(t, cs, "get_pending_messages", map[string]any{"session_token": chat})
	if r.isError || !strings.Contains(r.text, "old news") {
		t.Fatalf("the expired notice's message is still delivered: %s", r.text)
	}
}
