package fsstore

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"aipm/fsstore/internal/storage"
)

// The dependency rules (DESIGN section 20), judged on the task index
// (taskFlowFields) so that no rule reads every task file:
//
//   - a task waits for each task of its blockedBy that is not done, and,
//     as a parent, for each subtask under way (subtaskUnderWay) that
//     someone other than its own assignee has (a manager waits for its
//     workers);
//   - it is ready when it is todo, approved and waits for nothing;
//   - a change that would make a task wait, through blockers and
//     subtasks, for itself is refused, naming the cycle; one made by hand
//     is reported (doctor, the watcher), and its tasks wait for ever.

// MaxBlockers is how many tasks one task may wait for.
const MaxBlockers = 50

// A Wait is one thing a task waits for.
type Wait struct {
	TaskID string
	// Status is the task's status; "" when it does not exist.
	Status string
	// Subtask says TaskID is a subtask of the waiting task (the parent
	// rule), not one of its blockers.
	Subtask bool
}

// String is "tsk_… (todo)", "subtask tsk_… (in_progress)" or "tsk_… (does
// not exist)".
func (w Wait) String() string {
	what := w.TaskID
	if w.Subtask {
		what = "subtask " + w.TaskID
	}
	if w.Status == "" {
		return what + " (does not exist)"
	}
	return what + " (" + w.Status + ")"
}

// WaitsText says what a task waits for in one line: "tsk_a (todo), subtask
// tsk_b (in_progress)".
func WaitsText(ws []Wait) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = w.String()
	}
	return strings.Join(parts, ", ")
}

// stopKey names a stop of a task, the status and the moment aipm recorded
// it ("" for a status that is no stop): its news is given once per stop.
// A stop made by hand keeps the moment of the status before it, and is
// told apart by its status. Every key is made here, from the parsed time,
// so that the index's (read from the file's text) and the rules' (from
// the decoded task) agree whatever precision or offset a hand edit wrote.
func stopKey(status string, changedAt time.Time) string {
	if !StopsWork(status) {
		return ""
	}
	return status + "@" + changedAt.UTC().Format(time.RFC3339Nano)
}

// waitsOf is what e waits for (ix.mu held, the index derived).
func (ix *taskIndex) waitsOf(e *taskEntry) []Wait {
	var out []Wait
	for _, b := range e.flow.blockedBy {
		be := ix.entry(b)
		switch {
		case be == nil || be.err != nil:
			out = append(out, Wait{TaskID: b})
		case be.status != StatusDone:
			out = append(out, Wait{TaskID: b, Status: be.status})
		}
	}
	for _, c := range ix.children[e.id] {
		if subtaskUnderWay(c) && (e.assignee == "" || c.assignee != e.assignee) {
			out = append(out, Wait{TaskID: c.id, Status: c.status, Subtask: true})
		}
	}
	return out
}

// subtaskUnderWay is the one rule of a subtask its parent waits for: one
// planned to be done now (todo, approved), at work, or blocked; not one in
// the backlog or waiting for approval (planned for later, or not yet),
// nor one finished.
func subtaskUnderWay(c *taskEntry) bool {
	switch c.status {
	case StatusTodo:
		return c.flow.approval == ApprovalApproved
	case StatusInProgress, StatusBlocked:
		return true
	}
	return false
}

// ready is the one rule of a ready task: todo, approved, waiting for
// nothing.
func (ix *taskIndex) ready(e *taskEntry) bool {
	return e.err == nil && e.status == StatusTodo && e.flow.approval == ApprovalApproved && len(ix.waitsOf(e)) == 0
}

// waiting is the one rule of a waiting task: open, with something to wait
// for.
func (ix *taskIndex) waiting(e *taskEntry) bool {
	return e.err == nil && StatusOpen(e.status) && len(ix.waitsOf(e)) > 0
}

// waitedFor says whether e had something to wait for that is now done: a
// blocker, or a subtask (the parent rule). Only such a task starts by
// itself when it becomes ready (startsWhenReady).
func (ix *taskIndex) waitedFor(e *taskEntry) bool {
	if len(e.flow.blockedBy) > 0 {
		return true
	}
	return slices.ContainsFunc(ix.children[e.id], func(c *taskEntry) bool { return c.status == StatusDone })
}

// startsWhenReady is the one rule of a task that goes in progress by
// itself (DESIGN section 20): assigned, todo (a backlog task never starts
// by itself), approved, not started since it began to wait (startedReady,
// set by any start), and what it waited for all done. Whether its
// assignee is an AI agent, whom the watcher starts, the config says
// (startIfReady).
func (ix *taskIndex) startsWhenReady(e *taskEntry) bool {
	return e.assignee != "" && !e.flow.startedReady && ix.waitedFor(e) && ix.ready(e)
}

// dependents are the open tasks that wait for id as a blocker, newest
// first.
func (ix *taskIndex) dependents(id string) []*taskEntry {
	var out []*taskEntry
	for _, e := range ix.open {
		if slices.Contains(e.flow.blockedBy, id) {
			out = append(out, e)
		}
	}
	return out
}

// edges are the tasks e waits for or may wait for, as cycles count them:
// its blockers and all its subtasks.
func (ix *taskIndex) edges(id string) []string {
	var out []string
	if e := ix.entry(id); e != nil && e.err == nil {
		out = append(out, e.flow.blockedBy...)
	}
	for _, c := range ix.children[id] {
		out = append(out, c.id)
	}
	return out
}

// cycleVia returns the cycle that task id (a subtask of parent, when
// given) would close by waiting for blockers, as the path id → … → id; nil
// if none. A task not yet in the index (being created) is reached through
// its parent.
func (ix *taskIndex) cycleVia(id, parent string, blockers []string) []string {
	known := ix.entry(id) != nil
	seen := map[string]bool{}
	var walk func(at string) []string
	walk = func(at string) []string {
		if at == id {
			return []string{id}
		}
		if seen[at] {
			return nil
		}
		seen[at] = true
		next := ix.edges(at)
		if !known && at == parent {
			next = append(next, id)
		}
		for _, n := range next {
			if path := walk(n); path != nil {
				return append([]string{at}, path...)
			}
		}
		return nil
	}
	for _, b := range blockers {
		if path := walk(b); path != nil {
			return append([]string{id}, path...)
		}
	}
	return nil
}

// cycles are the cycles of the tasks as their files say (a hand edit
// makes them: aipm refuses one), each as the path from its smallest id
// back to it, in order; found again only once the tasks changed (the
// watcher asks on every pass).
func (ix *taskIndex) cycles() [][]string {
	if !ix.loopsKnown {
		ix.loops, ix.loopsKnown = ix.findCycles(), true
	}
	return ix.loops
}

// findCycles is cycles, found.
func (ix *taskIndex) findCycles() [][]string {
	const (
		unseen = iota
		onPath
		finished
	)
	state := map[string]int{}
	var path []string
	var found [][]string
	var visit func(id string)
	visit = func(id string) {
		state[id] = onPath
		path = append(path, id)
		for _, n := range ix.edges(id) {
			if ix.entry(n) == nil {
				continue
			}
			switch state[n] {
			case unseen:
				visit(n)
			case onPath:
				i := slices.Index(path, n)
				found = append(found, canonicalCycle(slices.Clone(path[i:])))
			}
		}
		path = path[:len(path)-1]
		state[id] = finished
	}
	for i := len(ix.order) - 1; i >= 0; i-- { // oldest first
		if e := ix.order[i]; e.err == nil && state[e.id] == unseen {
			visit(e.id)
		}
	}
	slices.SortFunc(found, func(a, b []string) int { return slices.Compare(a, b) })
	return slices.CompactFunc(found, slices.Equal)
}

// canonicalCycle rotates a cycle (its tasks in order, the first not
// repeated) to start at its smallest id, and closes it: a → b → a.
func canonicalCycle(c []string) []string {
	i := slices.Index(c, slices.Min(c))
	out := append(slices.Clone(c[i:]), c[:i]...)
	return append(out, out[0])
}

// cycleText is "a → b → a".
func cycleText(c []string) string { return strings.Join(c, " → ") }

// CheckBlockerIDs checks the form of the blockers of task id ("" for a
// task not created yet): task ids, none twice, not itself, at most
// MaxBlockers. The CLI calls it before it opens the project; the rules
// (checkDependencies) call it again.
func CheckBlockerIDs(id string, blockers []string) error {
	if len(blockers) > MaxBlockers {
		return storage.Kindf(storage.ErrInvalid, "a task may wait for at most %d tasks, not %d: split the work, or make one task wait for a task that waits for the rest", MaxBlockers, len(blockers))
	}
	for i, b := range blockers {
		if err := storage.CheckID(storage.PrefixTask, b); err != nil {
			return fmt.Errorf("blocked by: %w", err)
		}
		if b == id {
			return storage.CodeErr(storage.CodeDependencyCycle, "task %s cannot wait for itself: name the tasks it waits for", id)
		}
		if slices.Contains(blockers[:i], b) {
			return storage.Kindf(storage.ErrInvalid, "task %s is named twice among the tasks to wait for: name it once", b)
		}
	}
	return nil
}

// checkDependencies is the one check of the blockers task id (a subtask
// of parent, when given) is to wait for anew, against the tasks as they
// are: each exists, and waiting for them closes no cycle (a blocker kept
// or taken away is not judged again: a change that removes one of them
// is never refused for the others). It is called under the tasks lock,
// so that two changes cannot each pass it and close a cycle between them.
func (s *Store) checkDependencies(id, parent string, blockers []string) error {
	if err := CheckBlockerIDs(id, blockers); err != nil {
		return err
	}
	if len(blockers) == 0 {
		return nil
	}
	ix := &s.caches.tasks
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := s.refreshTasks(ix); err != nil {
		return err
	}
	for _, b := range blockers {
		if e := ix.entry(b); e == nil || e.err != nil {
			return &storage.CodeError{Code: storage.CodeTaskNotFound, Msg: fmt.Sprintf("task %s, to wait for, does not exist: see aipm task list or list_tasks", b), Err: storage.ErrNotFound}
		}
	}
	if c := ix.cycleVia(id, parent, blockers); c != nil {
		name := "task " + id
		if ix.entry(id) == nil {
			name = "the new task" // its id means nothing to anyone yet
			for i := range c {
				if c[i] == id {
					c[i] = name
				}
			}
		}
		return storage.CodeErr(storage.CodeDependencyCycle, "%s cannot wait for %s: that would close the cycle %s (a task waits for its blockers and its subtasks); leave that dependency out", name, c[1], cycleText(c))
	}
	return nil
}

// waitsOn says what task id waits for (nothing: it is not waiting), and which
// open tasks wait for it, newest first.
func (s *Store) waitsOn(id string) (waits []Wait, waitedBy []string, err error) {
	ix := &s.caches.tasks
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := s.refreshTasks(ix); err != nil {
		return nil, nil, err
	}
	if e := ix.entry(id); e != nil && e.err == nil {
		waits = ix.waitsOf(e)
	}
	for _, d := range ix.dependents(id) {
		waitedBy = append(waitedBy, d.id)
	}
	return waits, waitedBy, nil
}

// subtaskWaits are the subtasks task t, in progress, waits for (its
// blockers were passed when it started): the parent rule.
func (s *Store) subtaskWaits(t Task) ([]Wait, error) {
	ix := &s.caches.tasks
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := s.refreshTasks(ix); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(ix.waitsOf(entryOf(t)), func(w Wait) bool { return !w.Subtask }), nil
}

// hasSubtasks says whether task id has subtasks.
func (s *Store) hasSubtasks(id string) bool {
	ix := &s.caches.tasks
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := s.refreshTasks(ix); err != nil {
		return false
	}
	return len(ix.children[id]) > 0
}

// Cycles say, for each dependency cycle of the tasks as their files say
// (only a hand edit makes one), what it is and how to break it.
func (s *Store) Cycles() ([]string, error) {
	ix := &s.caches.tasks
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := s.refreshTasks(ix); err != nil {
		return nil, err
	}
	var out []string
	for _, c := range ix.cycles() {
		out = append(out, ix.cycleReason(c))
	}
	return out, nil
}

// cycleReason says what cycle c is and how to break it: the first of its
// dependencies that is a blocker taken away.
func (ix *taskIndex) cycleReason(c []string) string {
	fix := "take one of its subtasks out of its parent by hand"
	for i := 0; i+1 < len(c); i++ {
		if e := ix.entry(c[i]); slices.Contains(e.flow.blockedBy, c[i+1]) {
			fix = fmt.Sprintf("aipm task depend %s --on %s --remove", c[i], c[i+1])
			break
		}
	}
	return fmt.Sprintf("the tasks %s wait for one another (a task waits for its blockers and its subtasks), so none of them will ever be ready: break the cycle with %s", cycleText(c), fix)
}

// TaskCounts counts the ready and the waiting tasks (aipm status).
func (s *Store) TaskCounts() (ready, waiting int, err error) {
	ix := &s.caches.tasks
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := s.refreshTasks(ix); err != nil {
		return 0, 0, err
	}
	for _, e := range ix.open {
		switch {
		case ix.ready(e):
			ready++
		case ix.waiting(e):
			waiting++
		}
	}
	return ready, waiting, nil
}

// dependencyProblems is doctor's report of the dependencies as the files
// say: a task waiting for one that does not exist, and each cycle (a hand
// edit made them; the tasks in a cycle wait for ever).
func (s *Store) dependencyProblems() ([]storage.Problem, error) {
	ix := &s.caches.tasks
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := s.refreshTasks(ix); err != nil {
		return nil, err
	}
	var problems []storage.Problem
	rel := func(id string) string {
		path, _ := s.files.DocPath(storage.Tasks, id)
		return s.files.Rel(path)
	}
	for _, e := range ix.open {
		for _, b := range e.flow.blockedBy {
			if be := ix.entry(b); be == nil || be.err != nil {
				problems = append(problems, storage.Problem{Path: rel(e.id), Reason: fmt.Sprintf(
					"task %s waits for task %s, which does not exist: it will never be ready; remove it with aipm task depend %s --on %s --remove", e.id, storage.Clip(b, storage.MaxEchoedID), e.id, storage.Clip(b, storage.MaxEchoedID))})
			}
		}
	}
	for _, c := range ix.cycles() {
		problems = append(problems, storage.Problem{Path: rel(c[0]), Reason: ix.cycleReason(c)})
	}
	return problems, nil
}
