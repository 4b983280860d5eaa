package mcpserver_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"aipm/fsstore"
)

// notes returns the notifications of a get_notifications result.
func notes(r result) []map[string]any {
	var out []map[string]any
	list, _ := r.data["notifications"].([]any)
	for _, n := range list {
		out = append(out, n.(map[string]any))
	}
	return out
}

// Two sessions of one agent, task and chat: an interrupt for the task
// reaches the task session and only it, whatever the chat session calls,
// waiting or not.
func TestInterruptReachesOnlyTheTaskSession(t *testing.T) {
	p := newProject(t)
	task := p.taskInProgress("coder", "port the parser")
	taskCS, chatCS := p.connect(""), p.connect("")
	taskTok := p.authenticate(taskCS, "coder", "task")
	chatTok := p.authenticate(chatCS, "coder", "chat")

	waiting := make(chan result, 1)
	go func() {
		waiting <- call(t, chatCS, "get_next_action", map[string]any{"session_token": chatTok, "wait_seconds": 2})
	}()
	if _, err := p.store.UpdateTask(context.Background(), p.cfg, task.ID, "lead", fsstore.TaskChange{Status: fsstore.StatusBlocked, Reason: "spec changed"}); err != nil {
		t.Fatal(err)
	}
	if r := <-waiting; r.isError || r.str("action") == "get_notifications" || strings.Contains(r.text, "you have") {
		t.Fatalf("the waiting chat get_next_action was steered to the task's interrupt: %s", r.text)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"get_next_action", map[string]any{"session_token": chatTok, "wait_seconds": 1}},
		{"list_tasks", map[string]any{"session_token": chatTok}},
		{"get_notifications", map[string]any{"session_token": chatTok}},
	} {
		tool := c.tool
		r := call(t, chatCS, tool, c.args)
		if r.isError || strings.Contains(r.text, "INTERRUPT") || !strings.Contains(r.text, "notifications: none") || len(notes(r)) > 0 {
			t.Fatalf("chat session %s saw the task's interrupt: %s", tool, r.text)
		}
	}
	if r := call(t, taskCS, "get_task", map[string]any{"session_token": taskTok, "task_id": task.ID}); !strings.HasPrefix(r.text, "INTERRUPT (get_task did not run)") {
		t.Fatalf("task session after the interrupt: %s", r.text)
	}
	r := call(t, taskCS, "get_notifications", map[string]any{"session_token": taskTok})
	if ns := notes(r); len(ns) != 1 || ns[0]["type"] != "interrupt" || ns[0]["task_id"] != task.ID {
		t.Fatalf("task session get_notifications: %s", r.text)
	}
	if r := call(t, taskCS, "report_completed", map[string]any{"session_token": taskTok, "result": "blocked", "summary": "stopped"}); r.isError {
		t.Fatalf("report_completed: %s", r.text)
	}
}

// A notifications line that cannot be decoded: every call is refused with
// path:line (it might have been an interrupt), nothing is marked read; after
// doctor --repair the interrupt behind it is delivered.
func TestBadNotificationLineFailsClosed(t *testing.T) {
	p := newProject(t)
	task := p.taskInProgress("coder", "port the parser")
	cs := p.connect("")
	tok := p.authenticate(cs, "coder", "task")
	path, _ := p.store.NotificationsPath("coder")
	if err := os.WriteFile(path, []byte("{\"id\": \"ntf_broken\", \"type\": \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := p.store.UpdateTask(context.Background(), p.cfg, task.ID, "lead", fsstore.TaskChange{Status: fsstore.StatusBlocked, Reason: "spec changed"}); err != nil {
		t.Fatal(err)
	}
	before := p.tree()
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"get_task", map[string]any{"session_token": tok, "task_id": task.ID}},
		{"get_notifications", map[string]any{"session_token": tok}},
		{"report_completed", map[string]any{"session_token": tok, "result": "blocked", "summary": "x"}},
	} {
		tool := c.tool
		r := call(t, cs, tool, c.args)
		if r.code() != "notifications_unreadable" || !strings.Contains(r.text, "notifications.jsonl:1") || !strings.Contains(r.text, "aipm doctor") {
			t.Fatalf("%s with a bad notifications line: %s", tool, r.text)
		}
	}
	if p.tree() != before {
		t.Fatal("a refused call changed .ai-pm")
	}
	if _, err := p.store.Doctor(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if r := call(t, cs, "get_task", map[string]any{"session_token": tok, "task_id": task.ID}); !strings.HasPrefix(r.text, "INTERRUPT (get_task did not run)") || !strings.Contains(r.text, "spec changed") {
		t.Fatalf("after repair: %s", r.text)
	}
}

// Read means received: a batch returned to a session that makes no further
// call is returned again, marked, to the next session; a batch the session
// acknowledged by calling again is not.
func TestPendingMessagesRedeliveredAfterSilentSession(t *testing.T) {
	p := newProject(t)
	send := func(content string) {
		if _, err := p.store.Send(context.Background(), p.cfg, fsstore.OutgoingMessage{From: "lead", To: "coder", Content: content}); err != nil {
			t.Fatal(err)
		}
	}
	msgs := func(r result) (out []string) {
		list, _ := r.data["pending_messages"].([]any)
		for _, m := range list {
			m := m.(map[string]any)
			s, _ := m["content"].(string)
			if m["redelivered"] == true {
				s = "*" + s
			}
			out = append(out, s)
		}
		return out
	}
	send("one")
	first := p.connect("")
	tok := p.authenticate(first, "coder", "chat")
	if got := msgs(call(t, first, "get_pending_messages", map[string]any{"session_token": tok})); strings.Join(got, " ") != "one" {
		t.Fatalf("first session got %v", got)
	}
	first.Close() // the client went away before its next call

	send("two")
	second := p.connect("")
	tok = p.authenticate(second, "coder", "chat")
	if got := msgs(call(t, second, "get_pending_messages", map[string]any{"session_token": tok})); strings.Join(got, " ") != "*one two" {
		t.Fatalf("second session got %v, want *one two", got)
	}
	// The next call acknowledges: nothing comes again.
	if r := call(t, second, "get_next_action", map[string]any{"session_token": tok, "wait_seconds": 1}); r.str("action") == "get_pending_messages" {
		t.Fatalf("after acknowledging: %s", r.text)
	}
	if got := msgs(call(t, second, "get_pending_messages", map[string]any{"session_token": tok})); len(got) != 0 {
		t.Fatalf("acknowledged messages came again: %v", got)
	}
}

// `aipm interrupt AGENT` without a task stops the sessions live when it was
// written, and not a session started after it.
func TestAgentInterruptOnlyLiveSessions(t *testing.T) {
	p := newProject(t)
	p.taskInProgress("coder", "port the parser")
	cs := p.connect("")
	tok := p.authenticate(cs, "coder", "task")
	out, err := exec.Command(aipmBin, "--dir", p.store.ProjectDir(), "interrupt", "coder", "stop for now", "--as", "lead").CombinedOutput()
	if err != nil {
		t.Fatalf("aipm interrupt: %v\n%s", err, out)
	}
	if r := call(t, cs, "get_task", map[string]any{"session_token": tok}); !strings.HasPrefix(r.text, "INTERRUPT (get_task did not run)") {
		t.Fatalf("live session after aipm interrupt: %s", r.text)
	}
	if r := call(t, cs, "logout", map[string]any{"session_token": tok}); r.isError {
		t.Fatalf("logout: %s", r.text)
	}
	later := p.connect("")
	tok = p.authenticate(later, "coder", "task")
	if r := call(t, later, "get_task", map[string]any{"session_token": tok}); r.isError || !strings.Contains(r.text, "notifications: none") {
		t.Fatalf("a session started after the interrupt: %s", r.text)
	}
}

// get_notifications hands at most limit of them, the oldest, and says when
// more wait; the next call hands the rest; a limit out of range is refused.
func TestGetNotificationsLimit(t *testing.T) {
	p := newProject(t)
	cs := p.connect("")
	tok := p.authenticate(cs, "coder", "chat")
	for _, m := range []string{"one", "two", "three"} {
		if _, err := p.store.Notify(context.Background(), "coder", fsstore.Notification{Message: m}); err != nil {
			t.Fatal(err)
		}
	}
	messages := func(r result) string {
		var out []string
		for _, n := range notes(r) {
			out = append(out, n["message"].(string))
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		args map[string]any
		want string
		more bool
		code string
	}{
		{args: map[string]any{"limit": 501}, code: "invalid_limit"},
		{args: map[string]any{"limit": -1}, code: "invalid_limit"},
		{args: map[string]any{"limit": 2}, want: "two,one", more: true},
		{args: map[string]any{"limit": 2}, want: "three"},
		{args: map[string]any{}, want: ""},
	} {
		tc.args["session_token"] = tok
		r := call(t, cs, "get_notifications", tc.args)
		if tc.code != "" {
			if r.code() != tc.code {
				t.Fatalf("get_notifications %v: %q, want code %s", tc.args, r.text, tc.code)
			}
			continue
		}
		if r.isError || messages(r) != tc.want || r.data["has_more"] != tc.more {
			t.Fatalf("get_notifications %v: %q has_more %v (%s); want %q has_more %v", tc.args, messages(r), r.data["has_more"], r.text, tc.want, tc.more)
		}
	}
}
