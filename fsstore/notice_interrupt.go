package fsstore

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"aipm/fsstore/internal/storage"
	"aipm/internal/lockedfile"
)

// Interruption is one interrupt to write (DESIGN section 6): Agent is told
// to stop, by By (empty when nobody is known: a hand edit of a task file),
// for Reason. Task, when set, is the task it concerns: the interrupt then
// reaches only the task session working on it.
type Interruption struct {
	Agent, By, Reason string
	Task              *Task
	// StatusChange says the interrupt reports Task's status having been
	// set to blocked or cancelled (rather than an explicit aipm interrupt).
	StatusChange bool
	// UnlessSince, when set, writes nothing if an interrupt about Task was
	// written at or after it (a restarted watcher, which cannot tell a
	// hand edit made while it was away from a change through aipm).
	UnlessSince time.Time
	// HandEdit says Task's status was changed by a hand edit of its file:
	// the interrupt is keyed by that change (HandEditKey), so each edit
	// that warrants one interrupts once, however often it is seen.
	HandEdit bool
}

// interruptKind is the kind of the interrupt a status change to status
// causes: cancel for a cancelled task, pause for any other stop
// (StopsWork), none for a status that does not stop the work.
func interruptKind(status string) string {
	switch {
	case !StopsWork(status):
		return ""
	case status == StatusCancelled:
		return interruptCancel
	}
	return interruptPause
}

// HandEdit is who changed a task file by hand, as far as anyone knows.
const HandEdit = "a human (hand edit of the task file)"

// WriteInterrupt is the one writer of interrupt notifications: task status
// changes (UpdateTask), the watcher's reaction to a hand edit, and `aipm
// interrupt` all call it. An interrupt about no task needs a live session
// of its agent (ErrNobodyToInterrupt). An interrupt about a task also ends
// the task's open delegations (endTaskDelegations). An interrupt for a
// status change is keyed by the change (InterruptKey, or HandEditKey for a
// hand edit), so the same change never interrupts twice. It reports false
// when UnlessSince found an interrupt already written (a keyed interrupt
// whose key is in the file is not written again either, but reports true).
func (s *Store) WriteInterrupt(ctx context.Context, in Interruption) (Notification, bool, error) {
	if in.Task == nil && !s.hasLiveSession(in.Agent, "") {
		// Only a session live now reads it: one started later never would.
		return Notification{}, false, storage.Kindf(errNobodyToInterrupt, "nobody to interrupt: %s has no live session (an interrupt about no task is only for a session live now)", in.Agent)
	}
	n := Notification{Type: storage.NotifyInterrupt, From: in.By, Message: interruptText(in)}
	if in.Task != nil {
		n.TaskID = in.Task.ID
		if in.StatusChange {
			n.Kind = interruptKind(in.Task.Status)
		}
	}
	switch {
	case in.HandEdit && in.Task != nil:
		key, err := s.handEditKey(*in.Task)
		if err != nil {
			return Notification{}, false, fmt.Errorf("interrupt %s: %w", in.Agent, err)
		}
		n.Key = key
	case in.StatusChange && in.Task != nil && in.UnlessSince.IsZero():
		// A change made through aipm has a fresh statusChangedAt; a hand
		// edit keeps the old one, so its key could match an earlier change.
		n.Key = interruptKey(*in.Task)
	}
	wrote := true
	if !in.UnlessSince.IsZero() && in.Task != nil {
		done, err := s.hasInterruptSince(in.Agent, in.Task.ID, in.UnlessSince)
		if err != nil {
			return Notification{}, false, err
		}
		wrote = !done
	}
	if wrote {
		var err error
		if n, err = s.Notify(ctx, in.Agent, n); err != nil {
			return n, false, fmt.Errorf("interrupt %s: %w", in.Agent, err)
		}
	}
	if in.Task != nil {
		// The task stopped: so does the talk its session delegated.
		if err := s.endTaskDelegations(ctx, *in.Task, cmp.Or(in.By, HandEdit), n.Message); err != nil {
			return n, wrote, fmt.Errorf("interrupt %s: %w", in.Agent, err)
		}
	}
	if !wrote {
		return Notification{}, false, nil
	}
	return n, true, nil
}

// handEditKey is the key of the interrupt caused by a hand edit of task
// t's file: its status and a hash of the file's content, since a hand edit
// keeps the old statusChangedAt. The same save seen again has the same key;
// a later edit (blocked, in_progress, then cancelled) a new one.
func (s *Store) handEditKey(t Task) (string, error) {
	path, err := s.files.DocPath(storage.Tasks, t.ID)
	if err != nil {
		return "", err
	}
	_, id, err := lockedfile.ReadDoc(path)
	if err != nil {
		return "", s.files.Failed("read", path, err)
	}
	return "interrupt:" + t.ID + ":" + t.Status + ":edit:" + hex.EncodeToString(id.Sum[:12]), nil
}

// interruptText is the one text of each kind of interrupt: what happened,
// and no more. What to do about it depends on the session that reads it,
// and is said there (InterruptInstruction).
func interruptText(in Interruption) string {
	by := in.By
	if by == "" {
		by = HandEdit
	}
	reason := ""
	if in.Reason != "" {
		reason = ": " + in.Reason
	}
	switch {
	case in.Task != nil && in.StatusChange:
		return fmt.Sprintf("%s set your task %s (%q) to %s%s.", by, in.Task.ID, in.Task.Title, in.Task.Status, reason)
	case in.Task != nil:
		return fmt.Sprintf("%s interrupted your task %s (%q)%s.", by, in.Task.ID, in.Task.Title, reason)
	}
	return fmt.Sprintf("%s interrupted you%s.", by, reason)
}

// hasInterruptSince says whether agent's notifications hold an interrupt
// about task written at or after since: what keeps the watcher from
// interrupting twice for one change.
func (s *Store) hasInterruptSince(agent, taskID string, since time.Time) (bool, error) {
	path, err := s.files.NotificationsPath(agent)
	if err != nil {
		return false, err
	}
	recs, _, _, err := storage.ReadAll(path)
	if err != nil {
		return false, err
	}
	for i := len(recs) - 1; i >= 0; i-- {
		var n Notification
		if json.Unmarshal(recs[i].Data, &n) != nil {
			continue
		}
		if n.Type == storage.NotifyInterrupt && n.TaskID == taskID && !n.CreatedAt.Before(since) {
			return true, nil
		}
	}
	return false, nil
}

// InterruptInstruction is what a session of purpose must do about an
// interrupt of kind (Notification.Kind), naming only calls that
// session may make: a task session reports its task cancelled and drops
// the work (cancel), or reports it blocked (pause, or a plain stop); a
// chat session logs out. The interrupt's own message (fsstore's) says only
// what happened.
func InterruptInstruction(purpose, kind string) string {
	switch {
	case purpose != storage.PurposeTask:
		return "Stop what you are doing: call logout, then exit."
	case kind == interruptCancel:
		return `Stop working now and drop the work (the task was cancelled): call report_completed(result="cancelled", summary=what you did), then exit.`
	case kind == interruptPause:
		return `Stop working now: call report_completed(result="blocked", summary=what you did and what is left), then exit; the task waits until it is moved back to in_progress.`
	}
	return `Stop working now: call report_completed(result="blocked", summary=what you did and what is left), then exit.`
}
