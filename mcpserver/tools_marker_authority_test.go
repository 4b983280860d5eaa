package mcpserver_test

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// deliver sends a message to coder and hands it to coder's chat session
// through get_pending_messages, as a running agent receives it.
func (p *project) deliver(cs *mcp.ClientSession, token, from, content string) {
	p.t.Helper()
	p.send(from, "coder", content)
	if r := call(p.t, cs, "get_pending_messages", map[string]any{"session_token": token}); r.isError {
		p.t.Fatalf("get_pending_messages: %s", r.text)
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
