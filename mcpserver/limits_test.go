package mcpserver_test

import (
	"strings"
	"testing"

	"aipm/fsstore"
)

// Every oversized or malformed argument is refused with its code, the
// answer stays small however large the argument, and nothing changes on
// disk (DESIGN section 14).
func TestInputLimits(t *testing.T) {
	p := newProject(t)
	task := p.taskInProgress("coder", "limits")
	cs := p.connect("")
	token := p.authenticate(cs, "coder", "task")
	chat := p.authenticate(cs, "reviewer", "chat")
	huge := "tsk_" + strings.Repeat("A", 10<<20) // a 10 MB id
	over := func(field string) string { return strings.Repeat("é", fsstore.TextLimits[field]+1) }
	before := p.tree()
	for _, tc := range []struct {
		name string
		tool string
		args map[string]any
		code string
	}{
		{"content too long", "send_message", map[string]any{"session_token": chat, "target_agent_id": "coder", "content": over("content")}, "content_too_long"},
		{"reason too long", "update_task_status", map[string]any{"session_token": token, "status": "blocked", "reason": over("reason")}, "reason_too_long"},
		{"summary too long", "report_completed", map[string]any{"session_token": token, "result": "success", "summary": over("summary")}, "summary_too_long"},
		{"empty status", "update_task_status", map[string]any{"session_token": token, "status": ""}, "invalid_arguments"},
		{"empty result", "report_completed", map[string]any{"session_token": token, "result": "", "summary": "x"}, "invalid_arguments"},
		{"empty status filter", "list_tasks", map[string]any{"session_token": token, "status": ""}, "invalid_arguments"},
		{"10 MB task id", "get_task", map[string]any{"session_token": token, "task_id": huge}, "invalid_request"},
		{"10 MB parent id", "list_tasks", map[string]any{"session_token": token, "parent_id": huge}, "invalid_task_id"},
		{"10 MB assignee", "list_tasks", map[string]any{"session_token": token, "assignee": huge}, "invalid_agent_id"},
		{"10 MB target", "send_message", map[string]any{"session_token": chat, "target_agent_id": huge, "content": "hi"}, "agent_not_found"},
		{"10 MB related task", "send_message", map[string]any{"session_token": chat, "target_agent_id": "coder", "content": "hi", "related_task_id": huge}, "task_not_found"},
		{"10 MB status", "update_task_status", map[string]any{"session_token": token, "status": huge}, "invalid_arguments"},
		{"10 MB session token", "get_my_task", map[string]any{"session_token": huge}, "invalid_session"},
		{"10 MB agent id", "authenticate", map[string]any{"agent_id": huge, "passkey": "x"}, "authentication_failed"},
		{"10 MB passkey", "authenticate", map[string]any{"agent_id": "coder", "passkey": huge}, "authentication_failed"},
		{"10 MB project id", "authenticate", map[string]any{"agent_id": "coder", "passkey": p.passkeys["coder"], "project_id": huge}, "authentication_failed"},
		{"passkey with spaces", "authenticate", map[string]any{"agent_id": "coder", "passkey": " " + p.passkeys["coder"] + "\n"}, "authentication_failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, cs, tc.tool, tc.args)
			if r.code() != tc.code {
				t.Errorf("got %.300q, want code %s", r.text, tc.code)
			}
			if len(r.text) > 1024 {
				t.Errorf("answer has %d bytes; an error must stay under 1 KB", len(r.text))
			}
		})
	}
	if p.tree() != before {
		t.Error("refused input changed .ai-pm")
	}
	if got, _ := p.store.Task(task.ID); got.Status != fsstore.StatusInProgress {
		t.Errorf("task is %s after refused calls", got.Status)
	}
}
