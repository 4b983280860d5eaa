package watcher

import "testing"

// One interrupt per hand edit that warrants one, not one per session:
// blocked, then in_progress, then cancelled by hand while one session works
// on the task writes two interrupts, as the same changes through aipm do;
// the same save seen again, by this watcher or a restarted one, writes none
// (issue 21, item 16).
func TestHandEditsInterruptEachChange(t *testing.T) {
	p := newProject(t, "", nil)
	task := p.workingTask()
	d := p.loaded()
	pass := p.passOnce
	pass(d)
	for _, status := range []string{"blocked", "in_progress", "cancelled"} {
		p.handEdit(task.ID, func(doc map[string]any) { doc["status"] = status })
		pass(d)
	}
	if n := p.interrupts("coder"); n != 2 {
		t.Fatalf("%d interrupts after hand edits to blocked, in_progress, cancelled; want 2", n)
	}
	p.handEdit(task.ID, func(doc map[string]any) { doc["status"] = "cancelled" }) // the same save again
	pass(d)
	pass(p.loaded()) // a restarted watcher
	if n := p.interrupts("coder"); n != 2 {
		t.Fatalf("%d interrupts after the same save was seen again, want 2", n)
	}
}
