package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// The authorization matrix of DESIGN section 5: every built tool, called
// without a session, from a task session and from a chat session.
func TestAuthorizationMatrix(t *testing.T) {
	p := newProject(t)
	task := p.taskInProgress("coder", "matrix")
	cs := p.connect("")
	args := map[string]map[string]any{
		"get_task":                     {"task_id": task.ID},
		"update_task_status":           {"status": "blocked", "reason": "matrix"},
		"report_completed":             {"result": "success", "summary": "matrix"},
		"get_next_action":              {"wait_seconds": 1},
		"send_message":                 {"target_agent_id": "reviewer", "content": "matrix"},
		"respond_chat":                 {"content": "matrix"},
		"start_conversation":           {"target_agent_id": "reviewer"},
		"end_conversation":             {},
		"send_conversation_message":    {"content": "matrix"},
		"respond_conversation_message": {"content": "matrix"},
		"get_conversation_messages":    {"conversation_id": "cnv_01M7YZWACRA0328GMTHNDHB18Z"},
		"delegate_to_chat_session":     {"target_agent_id": "reviewer", "purpose": "matrix"},
		"report_delegation_completed":  {"delegation_id": "dlg_01M7YZWACRA0328GMTHNDHB18Z", "result": "matrix"},
		"request_task":                 {"title": "matrix"},
		"notify_task_session":          {"message": "matrix"},
		"update_task_from_chat":        {"task_id": task.ID, "description": "matrix"},
		"start_task_from_chat":         {"task_id": task.ID},
		"report_block_from_chat":       {"task_id": task.ID, "reason": "matrix"},
		"report_completion_from_chat":  {"task_id": task.ID, "summary": "matrix"},
	}
	for _, tool := range builtTools(t, cs) {
		level := toolLevel(t, cs, tool)
		for _, purpose := range []string{"", "task", "chat"} {
			t.Run(tool+"/"+map[string]string{"": "none"}[purpose]+purpose, func(t *testing.T) {
				a := matrixArgs(args, tool)
				if purpose != "" {
					a["session_token"] = p.authenticate(cs, "coder", purpose)
					if tool == "update_task_status" || tool == "report_completed" {
						// keep the task in progress for the next cell
						t.Cleanup(func() { restart(t, p, task.ID) })
					}
				}
				checkMatrixCell(t, tool, level, purpose, call(t, cs, tool, a))
			})
		}
	}
	// help lists every tool served, none as not available.
	r := call(t, cs, "help", map[string]any{})
	tools, _ := r.data["tools"].([]any)
	if len(tools) != len(builtTools(t, cs)) {
		t.Errorf("help lists %d tools, the server serves %d", len(tools), len(builtTools(t, cs)))
	}
	for _, x := range tools {
		if m, _ := x.(map[string]any); strings.Contains(fmt.Sprint(m["why"]), "not available") {
			t.Errorf("help lists a tool that is not served: %v", m)
		}
	}
}

// matrixArgs is a copy of the arguments the matrix calls tool with.
func matrixArgs(args map[string]map[string]any, tool string) map[string]any {
	if tool == "authenticate" {
		return map[string]any{"agent_id": "coder", "passkey": "wrong"}
	}
	a := map[string]any{}
	for k, v := range args[tool] {
		a[k] = v
	}
	return a
}

// refusedWith is the code a tool of level refuses a caller with whose
// session is of purpose ("": none), or "" when the tool runs.
func refusedWith(level, purpose string) string {
	switch {
	case level == "none":
		return ""
	case purpose == "":
		return "session_required"
	case level == "taskOnly" && purpose != "task", level == "chatOnly" && purpose != "chat":
		return "wrong_session_purpose"
	}
	return ""
}

// checkMatrixCell checks the result r of one cell of the matrix.
func checkMatrixCell(t *testing.T, tool, level, purpose string, r result) {
	t.Helper()
	want := refusedWith(level, purpose)
	switch {
	case want != "" && r.code() != want:
		t.Fatalf("%s (%s) from %q session: got %q, want %s", tool, level, purpose, r.text, want)
	case want == "" && (r.code() == "session_required" || r.code() == "wrong_session_purpose"):
		t.Fatalf("%s (%s) from %q session refused: %s", tool, level, purpose, r.text)
	case want == "wrong_session_purpose" && level == "chatOnly" && !strings.Contains(r.text, "delegate_to_chat_session"):
		t.Fatalf("refusal does not say what to use instead: %s", r.text)
	}
}

// restart puts a task back in progress after a matrix cell finished it.
func restart(t *testing.T, p *project, id string) {
	cur, err := p.store.Task(id)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, st := range map[string][]string{fsstore.StatusDone: {fsstore.StatusTodo, fsstore.StatusInProgress}, fsstore.StatusBlocked: {fsstore.StatusInProgress}}[cur.Status] {
		if _, err := p.store.UpdateTask(ctx, p.cfg, id, "coder", fsstore.TaskChange{Status: st}); err != nil {
			t.Fatal(err)
		}
	}
}

// builtTools lists the tools the server serves.
func builtTools(t testing.TB, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// toolLevel asks help for a tool's level.
func toolLevel(t testing.TB, cs *mcp.ClientSession, name string) string {
	t.Helper()
	r := call(t, cs, "help", map[string]any{})
	tools, _ := r.data["tools"].([]any)
	for _, x := range tools {
		if m, _ := x.(map[string]any); m["name"] == name {
			return m["level"].(string)
		}
	}
	t.Fatalf("help does not list %s", name)
	return ""
}

// The interrupt flow of DESIGN section 6, end to end: a human blocks the
// task with the CLI; the agent's next call returns the interrupt and does
// not run; get_notifications shows it; report_completed(blocked) works.
func TestInterruptFlow(t *testing.T) {
	p := newProject(t)
	task := p.taskInProgress("coder", "refactor the store")
	cs := p.connect("")
	token := p.authenticate(cs, "coder", "task")
	if r := call(t, cs, "get_next_action", map[string]any{"session_token": token}); r.str("action") != "work" {
		t.Fatalf("get_next_action: %s", r.text)
	}

	out, err := exec.Command(aipmBin, "--dir", p.store.ProjectDir(), "task", "status", task.ID, "blocked", "--reason", "requirements changed", "--as", "lead").CombinedOutput()
	if err != nil {
		t.Fatalf("aipm task status: %v\n%s", err, out)
	}

	var before string
	for i, tool := range []string{"get_next_action", "get_task", "list_tasks", "request_task"} {
		r := call(t, cs, tool, map[string]any{"session_token": token, "task_id": task.ID})
		if !r.isError || !strings.HasPrefix(r.text, "INTERRUPT ("+tool+" did not run)") || !strings.Contains(r.text, "requirements changed") {
			t.Fatalf("%s after the interrupt: %s", tool, r.text)
		}
		if r.data != nil {
			t.Fatalf("%s returned data beside the interrupt: %v", tool, r.data)
		}
		// The first records only that the interrupt was shown (read.json);
		// a call that does not comply changes nothing.
		if i > 0 && p.tree() != before {
			t.Fatalf("the interrupted %s changed .ai-pm", tool)
		}
		before = p.tree()
	}

	r := call(t, cs, "get_notifications", map[string]any{"session_token": token, "mark_as_read": false})
	notes, _ := r.data["notifications"].([]any)
	if len(notes) != 1 || notes[0].(map[string]any)["type"] != "interrupt" || !strings.Contains(r.text, "you have 1 notification") {
		t.Fatalf("get_notifications(mark_as_read=false): %s", r.text)
	}
	r = call(t, cs, "report_completed", map[string]any{"session_token": token, "result": "blocked", "summary": "stopped as asked"})
	if r.isError || r.str("action") != "exit" {
		t.Fatalf("report_completed: %s", r.text)
	}
	got, _ := p.store.Task(task.ID)
	if got.Status != fsstore.StatusBlocked || got.Result != "blocked" || got.StatusChangedBy != "lead" || got.Summary != "stopped as asked" {
		t.Errorf("task after report: %+v", got)
	}
	if r := call(t, cs, "get_next_action", map[string]any{"session_token": token}); r.code() != "session_ended" {
		t.Errorf("call after report_completed: %s", r.text)
	}
}

// Bad input of every kind: a clear tool error, and nothing changed on disk.
func TestBadInput(t *testing.T) {
	p := newProject(t)
	task := p.taskInProgress("coder", "bad input")
	cs := p.connect("")
	token := p.authenticate(cs, "coder", "task")
	chat := p.authenticate(cs, "reviewer", "chat")
	expired := p.authenticate(cs, "coder", "chat")
	ageSession(t, p, expired)
	before := p.tree()
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string // a prefix of the error text
	}{
		{"no_such_tool", map[string]any{}, "unknown_tool: there is no tool \"no_such_tool\": call help"},
		{"get_task", map[string]any{"session_token": token, "task_id": "tsk_../../etc/passwd"}, "invalid_request: \"tsk_../../etc/passwd\" is not a valid tsk id"},
		{"get_task", map[string]any{"session_token": token, "task_id": "tsk_01M7YZWACRA0328GMTHNDHB18Z"}, "task_not_found: task tsk_01M7YZWACRA0328GMTHNDHB18Z does not exist"},
		{"get_task", map[string]any{"session_token": token, "task_id": task.ID, "extra": 1}, "invalid_arguments: the arguments of get_task do not match its input schema"},
		{"list_tasks", map[string]any{"session_token": token, "status": "doing"}, "invalid_arguments: the arguments of list_tasks do not match its input schema (validating /properties/status: enum: doing does not equal any of"},
		{"list_tasks", map[string]any{"session_token": token, "assignee": "../x"}, "invalid_agent_id"},
		{"list_tasks", map[string]any{"session_token": token, "limit": 100000}, "invalid_limit"},
		{"get_task", map[string]any{}, "session_required: get_task needs session_token"},
		{"get_task", map[string]any{"session_token": "garbage"}, "invalid_session: get_task refused: session_token is malformed"},
		{"get_task", map[string]any{"session_token": "ses_01M7YZWACRA0328GMTHNDHB18Z.x"}, "invalid_session: get_task refused: no such session"},
		{"get_task", map[string]any{"session_token": token + "x"}, "invalid_session: get_task refused: session_token does not match"},
		{"get_task", map[string]any{"session_token": expired}, "session_expired"},
		{"report_completed", map[string]any{"session_token": chat, "result": "success", "summary": "x"}, "wrong_session_purpose: report_completed needs a task session"},
		{"report_completed", map[string]any{"session_token": token, "result": "great", "summary": "x"}, "invalid_arguments: the arguments of report_completed do not match its input schema (validating /properties/result: enum"},
		{"update_task_status", map[string]any{"session_token": token, "status": "blocked"}, "reason_required"},
		{"update_task_status", map[string]any{"session_token": token, "status": "backlog"}, "invalid_request: task " + task.ID + " cannot go from in_progress to backlog"},
		{"update_task_status", map[string]any{"session_token": chat, "status": "done", "task_id": task.ID}, "wrong_session_purpose"},
		// a null argument is named, with what to give instead
		{"send_message", map[string]any{"session_token": chat, "target_agent_id": "lead", "content": "x", "conversation_id": nil}, "invalid_arguments: the arguments of send_message do not match its input schema (conversation_id: null is not allowed: give a string or leave it out)"},
		{"list_tasks", map[string]any{"session_token": token, "limit": nil}, "invalid_arguments: the arguments of list_tasks do not match its input schema (limit: null is not allowed: give an integer or leave it out)"},
		{"send_message", map[string]any{"session_token": chat, "target_agent_id": "lead", "content": nil}, "invalid_arguments: the arguments of send_message do not match its input schema (content: null is not allowed: give a string):"},
	} {
		r := call(t, cs, tc.tool, tc.args)
		if !r.isError || !strings.HasPrefix(r.text, tc.want) {
			t.Errorf("%s %v:\n got %q\nwant prefix %q", tc.tool, tc.args, r.text, tc.want)
		}
	}
	if p.tree() != before {
		t.Error("bad input changed .ai-pm")
	}
}

// ageSession makes a session idle for longer than its timeout, as if an hour
// had passed, by editing its file the way a person could.
func ageSession(t *testing.T, p *project, token string) {
	t.Helper()
	id, _, _ := strings.Cut(token, ".")
	path, _ := p.store.DocPath(fsstore.Sessions, id)
	var ses fsstore.Session
	if err := readDoc(path, &ses); err != nil {
		t.Fatal(err)
	}
	ses.LastSeenAt = ses.LastSeenAt.Add(-2 * ses.Idle.Duration)
	data, _ := json.Marshal(ses)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
