package watcher

import (
	"context"
	"slices"
	"strings"
	"testing"

	"aipm/fsstore"
)

// Work that flows under the watcher (reactFlow, DESIGN section 20): a task
// whose blocker is done goes in progress once, by whatever path the
// blocker was done, however many passes and watchers look at it after;
// the news of a stop is told once per stop; a cycle made by hand is told
// to the humans once while it lasts, a restarted watcher included.

// flowPair creates task A (coder's) and task B (reviewer's, requested by
// lead), which waits for A.
func (p *project) flowPair() (a, b fsstore.Task) {
	p.t.Helper()
	ctx := context.Background()
	a, err := p.store.CreateTask(ctx, p.cfg(), fsstore.NewTask{Title: "Write it", Assignee: "coder", Requester: "lead"})
	if err != nil {
		p.t.Fatal(err)
	}
	b, err = p.store.CreateTask(ctx, p.cfg(), fsstore.NewTask{Title: "Check it", Assignee: "reviewer", Requester: "lead", BlockedBy: []string{a.ID}})
	if err != nil {
		p.t.Fatal(err)
	}
	return a, b
}

// task reads task id as aipm serves it.
func (p *project) task(id string) fsstore.Task {
	p.t.Helper()
	t, err := p.store.Task(id)
	if err != nil {
		p.t.Fatal(err)
	}
	return t
}

// told counts the messages agent received (its own sent copies aside)
// whose content holds text.
func (p *project) told(agent, text string) int {
	p.t.Helper()
	msgs, err := p.store.Tail(agent, 1000)
	if err != nil {
		p.t.Fatal(err)
	}
	n := 0
	for _, m := range msgs {
		if m.ReceiverID == "" && m.SenderID != agent && strings.Contains(m.Content, text) {
			n++
		}
	}
	return n
}

// TestFlowStartsOnce: B goes in progress once its blocker is done, through
// aipm (inline) or by a hand edit of A's file (the watcher's pass), and
// stays as it is through more passes and a restarted watcher: no second
// start, not even once a human has set it back to todo.
func TestFlowStartsOnce(t *testing.T) {
	tests := []struct {
		name string
		done func(p *project, a fsstore.Task)
		// watcherStarts is how many times the watcher logs the start
		// (none when aipm started B itself).
		watcherStarts int
	}{
		{"through aipm", func(p *project, a fsstore.Task) {
			if _, err := p.store.UpdateTask(context.Background(), p.cfg(), a.ID, "coder", fsstore.TaskChange{Status: fsstore.StatusDone}); err != nil {
				p.t.Fatal(err)
			}
		}, 0},
		{"by hand", func(p *project, a fsstore.Task) {
			p.handEdit(a.ID, func(doc map[string]any) { doc["status"] = fsstore.StatusDone })
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProject(t, "", nil)
			ctx := context.Background()
			a, b := p.flowPair()
			if _, err := p.store.UpdateTask(ctx, p.cfg(), a.ID, "lead", fsstore.TaskChange{Status: fsstore.StatusInProgress}); err != nil {
				t.Fatal(err)
			}
			d := p.loaded()
			p.passOnce(d)
			if got := p.task(b.ID); got.Status != fsstore.StatusTodo {
				t.Fatalf("B is %s while A is in progress; want todo", got.Status)
			}
			tt.done(p, a)
			p.passOnce(d)
			started := p.task(b.ID)
			if started.Status != fsstore.StatusInProgress || !started.StartedReady || started.StatusChangedBy != fsstore.SystemSender {
				t.Fatalf("B after A was done: status %s, startedReady %v, by %q; want in_progress, true, system", started.Status, started.StartedReady, started.StatusChangedBy)
			}
			if !p.exists("pending/reviewer.task.json") {
				t.Fatal("no task trigger for reviewer once B went in progress")
			}
			p.passOnce(d)
			p.passOnce(p.loaded()) // a restarted watcher
			if again := p.task(b.ID); !again.StatusChangedAt.Equal(started.StatusChangedAt) {
				t.Fatalf("B's status changed again on later passes: %s at %v, was in progress at %v", again.Status, again.StatusChangedAt, started.StatusChangedAt)
			}
			if n := p.log.count(`msg="task ready, set in progress" task=` + b.ID); n != tt.watcherStarts {
				t.Fatalf("the watcher set B in progress %d times; want %d\n%s", n, tt.watcherStarts, p.log)
			}

			// Set back to todo by a human, B does not start by itself again.
			if _, err := p.store.UpdateTask(ctx, p.cfg(), b.ID, "lead", fsstore.TaskChange{Status: fsstore.StatusTodo}); err != nil {
				t.Fatal(err)
			}
			p.passOnce(d)
			p.passOnce(p.loaded())
			if got := p.task(b.ID); got.Status != fsstore.StatusTodo {
				t.Fatalf("B set back to todo is %s after more passes; want todo (it starts by itself once)", got.Status)
			}
		})
	}
}

// TestFlowStopToldOnce: a blocker stopped tells B's requester and assignee
// once each (who made the change through aipm is not told), however many
// passes and watchers look at it after; B does not start.
func TestFlowStopToldOnce(t *testing.T) {
	tests := []struct {
		name      string
		stop      func(p *project, a fsstore.Task)
		requester int // messages lead gets
	}{
		{"blocked by hand", func(p *project, a fsstore.Task) {
			p.handEdit(a.ID, func(doc map[string]any) { doc["status"] = fsstore.StatusBlocked })
		}, 1},
		{"cancelled by hand", func(p *project, a fsstore.Task) {
			p.handEdit(a.ID, func(doc map[string]any) { doc["status"] = fsstore.StatusCancelled })
		}, 1},
		{"cancelled through aipm by lead", func(p *project, a fsstore.Task) {
			if _, err := p.store.UpdateTask(context.Background(), p.cfg(), a.ID, "lead", fsstore.TaskChange{Status: fsstore.StatusCancelled, Reason: "not needed"}); err != nil {
				p.t.Fatal(err)
			}
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProject(t, "", nil)
			a, b := p.flowPair()
			d := p.loaded()
			p.passOnce(d)
			tt.stop(p, a)
			news := "waits for task " + a.ID
			for i, d := range []*Daemon{d, d, p.loaded(), p.loaded()} {
				p.passOnce(d)
				if n := p.told("reviewer", news); n != 1 {
					t.Fatalf("pass %d: reviewer (B's assignee) told %d times; want 1", i+1, n)
				}
				if n := p.told("lead", news); n != tt.requester {
					t.Fatalf("pass %d: lead (B's requester) told %d times; want %d", i+1, n, tt.requester)
				}
			}
			if got := p.task(b.ID); got.Status != fsstore.StatusTodo {
				t.Fatalf("B is %s after its blocker stopped; want todo", got.Status)
			}
		})
	}
}

// TestFlowCycleToldOnce: a cycle made by a hand edit is logged and told to
// the human once while it lasts, by the same watcher and by a restarted
// one (aipm watch --once from cron is one each time); none of its tasks
// starts. Broken and made again, it is news again.
func TestFlowCycleToldOnce(t *testing.T) {
	p := newProject(t, "", nil)
	ctx := context.Background()
	a, b := p.flowPair()
	if _, err := p.store.UpdateTask(ctx, p.cfg(), a.ID, "lead", fsstore.TaskChange{Blockers: &fsstore.BlockersChange{Add: []string{b.ID}}}); err == nil {
		t.Fatal("aipm made a cycle; want it refused")
	}
	cycle := func(doc map[string]any) { doc["blockedBy"] = []string{b.ID} }
	p.handEdit(a.ID, cycle)
	news := "wait for one another"
	d := p.loaded()
	for i, d := range []*Daemon{d, d, p.loaded(), p.loaded()} {
		p.passOnce(d)
		if n := p.told("lead", news); n != 1 {
			t.Fatalf("pass %d: lead told of the cycle %d times; want 1\n%s", i+1, n, p.log)
		}
	}
	if n := p.log.count(`level=ERROR msg="dependency cycle"`); n == 0 {
		t.Fatalf("the cycle was not logged:\n%s", p.log)
	}
	for _, id := range []string{a.ID, b.ID} {
		if got := p.task(id); got.Status != fsstore.StatusTodo {
			t.Fatalf("task %s of the cycle is %s; want todo", id, got.Status)
		}
	}
	if p.exists("pending/coder.task.json") || p.exists("pending/reviewer.task.json") {
		t.Fatal("a task trigger was written for a task of the cycle")
	}

	// Broken by hand and made again: told again, once.
	p.handEdit(a.ID, func(doc map[string]any) { delete(doc, "blockedBy") })
	p.passOnce(d)
	p.handEdit(a.ID, cycle)
	p.passOnce(d)
	p.passOnce(d)
	if n := p.told("lead", news); n != 2 {
		t.Fatalf("lead told of the cycle %d times after it was broken and made again; want 2", n)
	}
	msgs, _ := p.store.Tail("lead", 10)
	last := msgs[len(msgs)-1]
	if last.SenderID != fsstore.SystemSender || last.Kind != fsstore.KindSystem || !slices.ContainsFunc([]string{a.ID + " → " + b.ID, b.ID + " → " + a.ID}, func(s string) bool { return strings.Contains(last.Content, s) }) {
		t.Fatalf("the cycle's message: %+v; want a system message naming %s and %s", last, a.ID, b.ID)
	}
}
