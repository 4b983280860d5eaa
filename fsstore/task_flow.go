package fsstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"aipm/fsstore/internal/storage"
	"aipm/internal/failpoint"
)

// Work that flows (DESIGN section 20): what follows, on other tasks, from
// a task's change, by whatever path it was made.
//
//   - A task done starts the tasks that waited for it and are now ready
//     (startsWhenReady): each goes in progress by itself, once, and the
//     watcher starts its assignee as for any task in progress.
//   - A task stopped (blocked or cancelled) starts nothing, and tells the
//     requester and assignee of each task waiting for it, and, blocked,
//     its parent's assignee, once per stop (stopNews).
//
// UpdateTask applies both after a change through aipm; the watcher's pass
// (Flow) applies them to every task as its file says, for a hand edit and
// for a process killed between a change and the start it owes. Both are
// idempotent: the start is a compare-and-swap under the tasks lock; the
// news is written into the stopped task with its change (StopTold,
// Untold) and sent as a task's end is (sendTells: a process killed before
// it sends leaves it to the task's next change or aipm doctor --repair).

// failpointStartUnwritten (internal/failpoint) is the moment a task that
// starts when ready is set in progress, before it is written: what a
// process killed there left undone, the next pass (Flow) does.
const failpointStartUnwritten = "task-start-unwritten"

// startReady sets in progress each of the tasks ids that starts when ready
// (startsWhenReady, judged again under the tasks lock), and returns those
// it started.
func (s *Store) startReady(ctx context.Context, cfg *storage.Config, ids []string) ([]Task, error) {
	var started []Task
	var errs []error
	for _, id := range ids {
		t, ok, err := s.startIfReady(ctx, cfg, id)
		if err != nil {
			errs = append(errs, fmt.Errorf("start task %s: %w", id, err))
			continue
		}
		if ok {
			started = append(started, t)
		}
	}
	return started, errors.Join(errs...)
}

// startIfReady sets task id in progress if it starts when ready, and says
// whether it did.
func (s *Store) startIfReady(ctx context.Context, cfg *storage.Config, id string) (Task, bool, error) {
	path, err := s.files.DocPath(storage.Tasks, id)
	if err != nil {
		return Task{}, false, err
	}
	started := false
	t, err := storage.UpdateDoc(ctx, s.files, path, storage.ModeFile, func(t *Task, exists bool) error {
		started = false
		if !exists || t.HandStatus != "" || !s.startsWhenReady(*t) {
			return storage.ErrNoChange
		}
		if _, ok := cfg.Agent(t.Assignee); !ok {
			return storage.ErrNoChange // doctor names an assignee not of the project
		}
		now := time.Now().UTC()
		if err := applyStatus(t, StatusInProgress, "", storage.SystemSender, now); err != nil {
			return storage.ErrNoChange // no longer a transition aipm makes
		}
		t.StartedReady, t.AipmStatus, t.UpdatedAt = true, t.Status, now
		failpoint.Kill(failpointStartUnwritten)
		started = true
		return nil
	})
	if err != nil {
		return Task{}, false, err
	}
	return t.served(s.files.Rel(path)), started, nil
}

// startsWhenReady judges t, as read under the tasks lock, by the index's
// view of the tasks it waits for.
func (s *Store) startsWhenReady(t Task) bool {
	ix := &s.caches.tasks
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := s.refreshTasks(ix); err != nil {
		return false
	}
	return ix.startsWhenReady(entryOf(t))
}

// entryOf is the index entry of t as read.
func entryOf(t Task) *taskEntry {
	return &taskEntry{id: t.ID, taskFields: &taskFields{status: t.Status, assignee: t.Assignee, parentID: t.ParentID, flow: flowFieldsOf(t)}}
}

// awaiting are the tasks a change of task t to done may start: those
// waiting for it, and its parent.
func (s *Store) awaiting(t Task) ([]string, error) {
	_, ids, err := s.waitsOn(t.ID)
	if t.ParentID != "" {
		ids = append(ids, t.ParentID)
	}
	return ids, err
}

// stopNews is the one rule of who hears that task t (as it is about to be
// written, by `by` at now) stopped: if its status is a stop not yet told
// (StopTold), the requester and assignee of each open task waiting for
// it, and, when it is blocked, its parent's assignee (a manager learns its
// worker is stuck), each once; who made the change is left out, and someone the task's own
// end message tells already (among t.Untold) reads the news in it. It
// records the stop as told and returns the new messages, which the caller
// adds to t.Untold.
func (s *Store) stopNews(cfg *storage.Config, t *Task, by, reason string, now time.Time) []taskTell {
	key := stopKey(t.Status, t.StatusChangedAt)
	if key == "" || t.StopTold == key {
		return nil
	}
	t.StopTold = key
	_, waiting, err := s.waitsOn(t.ID)
	if err != nil {
		return nil
	}
	from := storage.SystemSender
	if _, ok := cfg.Agent(by); ok {
		from = by
	}
	var tells []taskTell
	tell := func(to, content string) {
		if _, ok := cfg.Agent(to); !ok || to == by || to == storage.SystemSender {
			return
		}
		if i := slices.IndexFunc(t.Untold, func(tl taskTell) bool { return tl.To == to && tl.At.Equal(now) }); i >= 0 {
			t.Untold[i].Content = withNews(t.Untold[i].Content, content, t.ID) // this change's end message
			return
		}
		if i := slices.IndexFunc(tells, func(tl taskTell) bool { return tl.To == to }); i >= 0 {
			tells[i].Content = withNews(tells[i].Content, content, t.ID)
			return
		}
		tells = append(tells, taskTell{MessageID: storage.NewID(storage.PrefixMessage), From: from, To: to, Content: content, At: now})
	}
	why := ""
	if reason = strings.TrimSpace(reason); reason != "" {
		why = ": " + storage.Clip(reason, maxNewsReason)
	}
	for _, id := range waiting {
		d, err := s.Task(id)
		if err != nil || !StatusOpen(d.Status) {
			continue
		}
		text := fmt.Sprintf("Task %s %q waits for task %s %q, which is now %s%s. %s will not start until %s is done: move %s on, or take the dependency away (aipm task depend %s --on %s --remove).",
			d.ID, storage.Clip(d.Title, storage.MaxTitle), t.ID, storage.Clip(t.Title, storage.MaxTitle), t.Status, why, d.ID, t.ID, t.ID, d.ID, t.ID)
		tell(d.Requester, text)
		tell(d.Assignee, text)
	}
	if t.ParentID != "" && t.Status == StatusBlocked { // a subtask cancelled is no worker stuck
		if p, err := s.Task(t.ParentID); err == nil && StatusOpen(p.Status) {
			tell(p.Assignee, fmt.Sprintf("Subtask %s %q of your task %s %q is now %s (set by %s)%s.",
				t.ID, storage.Clip(t.Title, storage.MaxTitle), p.ID, storage.Clip(p.Title, storage.MaxTitle), t.Status, cmp.Or(by, HandEdit), why))
		}
	}
	return tells
}

// maxNewsReason is how much of a stop's reason its news carries: the
// news of many waiting tasks shares one chat message (storage.MaxContent).
const maxNewsReason = 300

// withNews adds news to a message's content, within what a chat message
// holds: past it, the message says where the rest is (aipm task show of
// the stopped task).
func withNews(content, news, stopped string) string {
	out := content + "\n" + news
	if utf8.RuneCountInString(out) <= storage.MaxContent {
		return out
	}
	more := fmt.Sprintf(" … (what waits for %s: aipm task show %s)", stopped, stopped)
	if strings.HasSuffix(content, more) {
		return content // cut already
	}
	return storage.Clip(out, storage.MaxContent-len(more)-len("... (99999 bytes)")) + more // bytes bound characters
}

// flowAfter is what follows from a change of a task through aipm (before
// to after): a task done starts what waited for it; one whose blockers,
// status, assignee or approval changed may start itself, by the rule the
// watcher's pass applies to every task (Flow).
func (s *Store) flowAfter(ctx context.Context, cfg *storage.Config, before, after Task) error {
	var ids []string
	if after.Status == StatusDone && before.Status != StatusDone {
		var err error
		if ids, err = s.awaiting(after); err != nil {
			return err
		}
	}
	if !slices.Equal(before.BlockedBy, after.BlockedBy) || before.Status != after.Status || before.Assignee != after.Assignee || before.ApprovalStatus != after.ApprovalStatus {
		ids = append(ids, after.ID) // it may be ready itself now, as the watcher's pass would find
	}
	if len(ids) == 0 {
		return nil
	}
	_, err := s.startReady(ctx, cfg, ids)
	return err
}

// Flow applies the rules of work that flows to every task as its file
// says (the watcher's pass): it starts each task that starts when ready,
// and gives the news of each stop not yet told. It returns the tasks it
// started.
func (s *Store) Flow(ctx context.Context, cfg *storage.Config) ([]Task, error) {
	starts, stops, err := s.flowDue()
	if err != nil {
		return nil, err
	}
	started, err := s.startReady(ctx, cfg, starts)
	errs := []error{err}
	for _, id := range stops {
		errs = append(errs, s.tellStop(ctx, cfg, id))
	}
	return started, errors.Join(errs...)
}

// flowDue are the tasks, as the index says, that start when ready, and
// the stopped tasks whose stop is not told yet and that someone waits on.
// A stop may be cancelled, which is not open: the stops are looked for
// among all the tasks, the starts among the open ones.
func (s *Store) flowDue() (starts, stops []string, err error) {
	ix := &s.caches.tasks
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := s.refreshTasks(ix); err != nil {
		return nil, nil, err
	}
	waitedOn := map[string]bool{}
	for _, e := range ix.open {
		if ix.startsWhenReady(e) {
			starts = append(starts, e.id)
		}
		for _, b := range e.flow.blockedBy {
			waitedOn[b] = true
		}
	}
	for _, e := range ix.order { // a cancelled task is no longer open
		if e.err != nil || e.flow.stop == "" || e.flow.stop == e.flow.stopTold {
			continue
		}
		parent := ix.entry(e.parentID)
		if waitedOn[e.id] || (parent != nil && parent.assignee != "" && e.status == StatusBlocked) {
			stops = append(stops, e.id)
		}
	}
	return starts, stops, nil
}

// tellStop gives the news of task id's stop (stopNews), as a change
// through aipm would have, for a stop made by hand or one whose news a
// killed process did not record.
func (s *Store) tellStop(ctx context.Context, cfg *storage.Config, id string) error {
	path, err := s.files.DocPath(storage.Tasks, id)
	if err != nil {
		return err
	}
	var fresh []taskTell
	now := time.Now().UTC()
	t, err := storage.UpdateDoc(ctx, s.files, path, storage.ModeFile, func(t *Task, exists bool) error {
		if !exists {
			return storage.ErrNoChange
		}
		before := t.StopTold
		by := HandEdit
		if !t.handEdited() {
			by = t.StatusChangedBy
		}
		fresh = s.stopNews(cfg, t, by, t.BlockedReason, now)
		if t.StopTold == before {
			return storage.ErrNoChange
		}
		t.Untold = append(t.Untold, fresh...)
		if t.HandStatus != "" {
			t.Status = t.HandStatus // written back as the human left it
		}
		return nil
	})
	if err != nil || len(fresh) == 0 {
		return err
	}
	if _, err := s.sendTells(ctx, t, fresh, now); err != nil {
		return fmt.Errorf("task %s stopped, but %w; aipm doctor --repair tells them", id, err)
	}
	return nil
}
