package watcher

import (
	"context"
	"strings"
	"testing"

	"aipm/fsstore"
)

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

// A delegation ends when its task ends, whatever ends it: a hand edit of
// the task file to done ends its open delegation (failed, saying why), as
// a change through aipm does (issue 34, item 3).
func TestHandEditEndsDelegations(t *testing.T) {
	p := newProject(t, "", nil)
	task := p.workingTask()
	d := p.loaded()
	p.passOnce(d)
	dlg, err := p.store.Delegations().Create(context.Background(), p.cfg(), fsstore.NewDelegation{Agent: "coder", TaskID: task.ID, Target: "reviewer", Purpose: "ask for a review"})
	if err != nil {
		t.Fatal(err)
	}
	p.passOnce(d)
	open, _ := p.store.Delegations().List(fsstore.DelegationFilter{Open: true})
	if len(open) != 1 {
		t.Fatalf("%d open delegations while the task is in progress; want 1", len(open))
	}
	p.handEdit(task.ID, func(doc map[string]any) { doc["status"] = "done" })
	p.passOnce(d)
	all, _ := p.store.Delegations().List(fsstore.DelegationFilter{})
	if len(all) != 1 || all[0].ID != dlg.ID || all[0].Status != fsstore.DlgFailed || !strings.Contains(all[0].Result, "ended with its task") {
		t.Fatalf("after the task was set done by hand: %+v", all)
	}
}
