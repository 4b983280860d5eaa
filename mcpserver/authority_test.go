package mcpserver_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"aipm/fsstore"
	"aipm/hook"
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
	r := call(t, cs, "get_my_task", map[string]any{"session_token": token})
	if !r.isError || !strings.HasPrefix(r.text, "INTERRUPT (get_my_task did not run)") || !strings.Contains(r.text, "wrong approach") {
		t.Fatalf("get_my_task after aipm interrupt --task: %s", r.text)
	}
	got := p.runHook(hook.Claude, "coder", "task", hook.PreToolUse, "Bash")
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
