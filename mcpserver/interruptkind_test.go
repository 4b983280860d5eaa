package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"aipm/fsstore"
)

// Interrupts have two kinds (seed 004): a cancelled task's session is told
// to drop the work and report it cancelled, which report_completed
// accepts; a blocked task's session to report blocked and wait (issue 21,
// item 20).
func TestInterruptKinds(t *testing.T) {
	p := newProject(t)
	cs := p.connect("")
	for _, c := range []struct {
		status, action, want, result string
	}{
		{fsstore.StatusCancelled, "cancel", `report_completed(result="cancelled"`, "cancelled"},
		{fsstore.StatusBlocked, "pause", `report_completed(result="blocked"`, "blocked"},
	} {
		task := p.taskInProgress("coder", "kinds "+c.status)
		token := p.authenticate(cs, "coder", "task")
		if _, err := p.store.UpdateTask(context.Background(), p.cfg, task.ID, "lead", fsstore.TaskChange{Status: c.status, Reason: "plans changed"}); err != nil {
			t.Fatal(err)
		}
		r := call(t, cs, "get_task", map[string]any{"session_token": token})
		if !r.isError || !strings.Contains(r.text, c.want) {
			t.Errorf("%s: the interrupt says %q; want %s", c.status, r.text, c.want)
		}
		r = call(t, cs, "get_notifications", map[string]any{"session_token": token, "mark_as_read": false})
		notes, _ := r.data["notifications"].([]any)
		if len(notes) != 1 {
			t.Fatalf("%s: get_notifications: %s", c.status, r.text)
		}
		n := notes[0].(map[string]any)
		if n["action"] != c.action || !strings.Contains(n["instruction"].(string), c.want) {
			t.Errorf("%s: notification action %v, instruction %q; want %s and %s", c.status, n["action"], n["instruction"], c.action, c.want)
		}
		r = call(t, cs, "report_completed", map[string]any{"session_token": token, "result": c.result, "summary": "stopped"})
		if r.isError {
			t.Errorf("%s: report_completed(%s): %s", c.status, c.result, r.text)
		}
	}
}
