package fsstore

import (
	"aipm/fsstore/internal/storage"
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Task statuses (DESIGN section 11).
const (
	StatusBacklog    = "backlog"
	StatusTodo       = "todo"
	StatusInProgress = "in_progress"
	StatusBlocked    = "blocked"
	StatusDone       = "done"
	StatusCancelled  = "cancelled"
)

// Statuses lists every task status in workflow order.
var Statuses = []string{StatusBacklog, StatusTodo, StatusInProgress, StatusBlocked, StatusDone, StatusCancelled}

// transitions is the one table of allowed status changes. done and
// cancelled may be reopened to todo; everything else follows the work.
var transitions = map[string][]string{
	StatusBacklog:    {StatusTodo, StatusInProgress, StatusCancelled},
	StatusTodo:       {StatusBacklog, StatusInProgress, StatusBlocked, StatusCancelled},
	StatusInProgress: {StatusTodo, StatusBlocked, StatusDone, StatusCancelled},
	StatusBlocked:    {StatusTodo, StatusInProgress, StatusCancelled},
	StatusDone:       {StatusTodo},
	StatusCancelled:  {StatusTodo},
}

// Approval states of a task.
const (
	ApprovalApproved = "approved"
	ApprovalPending  = "pending_approval"
	ApprovalRejected = "rejected"
)

// Priorities are the task priorities, lowest first.
var Priorities = []string{"low", "normal", "high", "urgent"}

// DefaultPriority is a new task's priority when none is given.
const DefaultPriority = "normal"

// Task is tasks/<id>.json.
type Task struct {
	ID             string `json:"id"`
	Title          string `json:"title"`
	Description    string `json:"description,omitempty"`
	Status         string `json:"status"`
	Priority       string `json:"priority"`
	Assignee       string `json:"assignee,omitempty"`
	ParentID       string `json:"parentId,omitempty"`
	Requester      string `json:"requester,omitempty"`
	ApprovalStatus string `json:"approvalStatus"`
	// AskedToApprove are the humans a task request asked to decide it,
	// fixed when the request is made: only they decide it (Approvers).
	AskedToApprove  []string `json:"askedToApprove,omitempty"`
	StatusChangedBy string   `json:"statusChangedBy,omitempty"`
	// AipmStatus is the status aipm last wrote. A status edited by hand is
	// judged against it (settle): one that aipm would not allow from it is
	// not taken.
	AipmStatus string `json:"aipmStatus,omitempty"`
	// HandStatus, set when reading, is the status the file says when it was
	// edited by hand to one aipm does not allow; Status is then AipmStatus,
	// the task's last valid status. Never written.
	HandStatus      string    `json:"-"`
	StatusChangedAt time.Time `json:"statusChangedAt"`
	BlockedReason   string    `json:"blockedReason,omitempty"`
	Result          string    `json:"result,omitempty"`
	SourceMessageID string    `json:"sourceMessageId,omitempty"`
	Summary         string    `json:"summary,omitempty"`
	CreatedAt       time.Time `json:"createdAt"`
	UpdatedAt       time.Time `json:"updatedAt"`

	// BlockedBy are the tasks this one waits for (DESIGN section 20): it
	// is ready once each of them is done (task_deps.go).
	BlockedBy []string `json:"blockedBy,omitempty"`
	// Group, on a task nobody is assigned, names the group of config.toml
	// whose AI agents may claim it; without one, any AI agent may
	// (task_claim.go).
	Group string `json:"group,omitempty"`
	// StartedReady says the task went in progress since it last began to
	// wait (any start of a task with blockers sets it; a change of its
	// blockers clears it): aipm sets it in progress by itself only while
	// it is false (task_flow.go).
	StartedReady bool `json:"startedReady,omitempty"`
	// StopTold is the stop (status@statusChangedAt) of this task whose
	// news the tasks waiting for it were given (task_flow.go): once each.
	StopTold string `json:"stopTold,omitempty"`

	// PendingChange is a change asked through chat that waits for a
	// human's decision (ChangeRequest).
	PendingChange *ChangeRequest `json:"pendingChange,omitempty"`

	// Untold are the messages a status change owes and has not sent yet
	// (taskTell): written with the change, taken out once sent.
	Untold []taskTell `json:"untold,omitempty"`
}

// StatusOpen is the one rule of an open task: one not done or cancelled
// (the work may still happen).
func StatusOpen(status string) bool { return status != StatusDone && status != StatusCancelled }

// StopsWork is the one rule of a stop (DESIGN sections 6 and 11): a task
// set to blocked or cancelled stops the work of its task session, blocked
// until someone moves it back (an interrupt of kind pause), cancelled for
// good (cancel). Everything that follows from a stop asks it: who is
// interrupted (Interrupts, and the watcher for a hand edit), the kind of
// the interrupt, whether an interrupt still stops a session, whether a
// task session's wait ends, which status only a human lifts
// (checkHumanStop), and which change carries a reason (CheckStatusReason).
func StopsWork(status string) bool { return status == StatusBlocked || status == StatusCancelled }

// CheckStatus reports whether s is a task status.
func CheckStatus(s string) error {
	return storage.CheckEnum("status", s, Statuses)
}

// checkTransition is the one check of a task status change.
func checkTransition(t Task, to string) error {
	if err := CheckStatus(to); err != nil {
		return err
	}
	if t.Status == to {
		return fmt.Errorf("task %s is already %s", t.ID, to)
	}
	if to == StatusInProgress && t.ApprovalStatus != ApprovalApproved {
		return fmt.Errorf("task %s is %s and cannot start: approve it first with aipm task approve %s", t.ID, t.ApprovalStatus, t.ID)
	}
	if !slices.Contains(Statuses, t.Status) {
		return fmt.Errorf("task %s has the status %q, which is not one aipm knows (%s): set its \"status\" in %s/%s/%s.json by hand to one of them (aipm doctor lists the problem)", t.ID, storage.Clip(t.Status, storage.MaxEchoedID), strings.Join(Statuses, ", "), storage.DirName, storage.Tasks, t.ID)
	}
	if !slices.Contains(transitions[t.Status], to) {
		return fmt.Errorf("task %s cannot go from %s to %s: from %s it can go to %s", t.ID, t.Status, to, t.Status, strings.Join(transitions[t.Status], ", "))
	}
	return nil
}

// handEditAllowed is the one rule of a status edited by hand (the file's
// status differs from the status aipm last wrote, aipm): it is taken if it
// is a transition checkTransition allows from aipm for a task of that
// approval state. A status that is not one (an invalid task, which
// aipm shows as such and ignores), or a task aipm has not recorded a
// status for (written before aipm recorded one), is left as it is.
func handEditAllowed(status, aipm, approval string) bool {
	if aipm == "" || status == aipm || !slices.Contains(Statuses, status) || !slices.Contains(Statuses, aipm) {
		return true
	}
	return checkTransition(Task{Status: aipm, ApprovalStatus: approval}, status) == nil
}

// Settle applies handEditAllowed to a task as read: a status edited by
// hand that aipm does not allow is kept in HandStatus, and the task's
// status is its last valid one. Every read of a task document goes
// through it (decodeDoc), the task index through the same rule.
func (t *Task) Settle() {
	t.HandStatus = ""
	if !handEditAllowed(t.Status, t.AipmStatus, t.ApprovalStatus) {
		t.HandStatus, t.Status = t.Status, t.AipmStatus
	}
}

// illegalEdit explains a status edited by hand that aipm does not take,
// or is "" when there is none.
func (t Task) illegalEdit() string {
	if t.HandStatus == "" {
		return ""
	}
	err := checkTransition(Task{ID: t.ID, Status: t.Status, ApprovalStatus: t.ApprovalStatus}, t.HandStatus)
	why := fmt.Sprintf("from %s it can go to %s", t.Status, strings.Join(transitions[t.Status], ", "))
	if slices.Contains(transitions[t.Status], t.HandStatus) && err != nil {
		why = fmt.Sprintf("the task is %s: a human approves it first (aipm task approve %s)", t.ApprovalStatus, t.ID)
	}
	return fmt.Sprintf("%s -> %s by hand is not allowed (%s); aipm treats the task as %s: change it with aipm task status %s STATUS, or set it back by hand", t.Status, t.HandStatus, why, t.Status, t.ID)
}

// Interrupts reports whether a status change made by `by` must interrupt
// the assignee's task session (DESIGN section 6): someone else moved a task
// that was in progress to blocked or cancelled. The watcher calls it for
// hand edits too.
func Interrupts(before, after Task, by string) bool {
	return before.Status == StatusInProgress && StopsWork(after.Status) &&
		after.Assignee != "" && by != after.Assignee
}

// NewTask is what creating a task takes.
type NewTask struct {
	Title, Description, Priority, Assignee, ParentID, Requester, Status string
	NeedsApproval                                                       bool
	// AskedToApprove are the humans who decide a task that needs approval.
	AskedToApprove []string
	// SourceMessageID is the marked chat message that asked for the task.
	SourceMessageID string
	// BlockedBy are the tasks the new one waits for (DESIGN section 20).
	BlockedBy []string
	// Group, for a task nobody is assigned, is the group whose AI agents
	// may claim it ("": any AI agent).
	Group string
}

// CreateTask writes a new task after checking its fields against cfg; it
// starts in one of StartStatuses (NewTask.checkStatus), todo if none is
// given.
func (s *Store) CreateTask(ctx context.Context, cfg *storage.Config, in NewTask) (Task, error) {
	title := strings.TrimSpace(in.Title)
	if title == "" {
		return Task{}, errors.New("a task needs a title: give a short description of the work")
	}
	if err := errors.Join(storage.CheckText("title", title), storage.CheckText("description", in.Description)); err != nil {
		return Task{}, err
	}
	if in.Priority == "" {
		in.Priority = DefaultPriority
	}
	if !slices.Contains(Priorities, in.Priority) {
		return Task{}, fmt.Errorf("priority %q is invalid: use one of %s", in.Priority, strings.Join(Priorities, ", "))
	}
	if in.Status == "" {
		in.Status = StatusTodo
	}
	if err := in.checkStatus(); err != nil {
		return Task{}, err
	}
	if err := storage.CheckAgentRef(cfg, in.Assignee, "assignee"); err != nil {
		return Task{}, err
	}
	if in.ParentID != "" {
		if _, err := s.Task(in.ParentID); err != nil {
			return Task{}, fmt.Errorf("parent task: %w", err)
		}
	}
	if err := errors.Join(CheckBlockerIDs("", in.BlockedBy), checkGroup(cfg, in.Group)); err != nil {
		return Task{}, err
	}
	now := time.Now().UTC()
	t := Task{
		ID: storage.NewID(storage.PrefixTask), Title: title, Description: in.Description, Status: in.Status,
		Priority: in.Priority, Assignee: in.Assignee, ParentID: in.ParentID, Requester: in.Requester,
		ApprovalStatus: ApprovalApproved, StatusChangedBy: in.Requester, StatusChangedAt: now, AipmStatus: in.Status,
		SourceMessageID: in.SourceMessageID, CreatedAt: now, UpdatedAt: now, BlockedBy: slices.Clone(in.BlockedBy), Group: in.Group,
	}
	if in.NeedsApproval {
		t.ApprovalStatus, t.AskedToApprove = ApprovalPending, in.AskedToApprove
	}
	path, _ := s.files.DocPath(storage.Tasks, t.ID)
	_, err := storage.UpdateDoc(ctx, s.files, path, storage.ModeFile, func(doc *Task, exists bool) error {
		if exists {
			return fmt.Errorf("task %s: %w", t.ID, storage.ErrExists)
		}
		if err := s.checkDependencies(t.ID, t.ParentID, t.BlockedBy); err != nil {
			return err
		}
		*doc = t
		return nil
	})
	if err != nil || len(t.BlockedBy) == 0 {
		return t, err
	}
	// Created: a start that fails is the watcher's to make again (its
	// pass applies the same rule), not a failure of the creation.
	if started, err := s.startReady(ctx, cfg, []string{t.ID}); err == nil && len(started) == 1 {
		return started[0], nil
	}
	return t, nil
}

// Task reads one task.
func (s *Store) Task(id string) (Task, error) {
	path, err := s.files.DocPath(storage.Tasks, id)
	if err != nil {
		return Task{}, err
	}
	var t Task
	if err := s.files.ReadDoc(path, &t); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return Task{}, storage.Kindf(storage.ErrNotFound, "task %s does not exist: see list_tasks or aipm task list", id)
		}
		return Task{}, err
	}
	return t.served(s.files.Rel(path)), nil
}

// TaskFilter selects tasks; empty fields match everything.
type TaskFilter struct {
	Status, Assignee, ParentID string
	// Open keeps only tasks that are not done or cancelled.
	Open bool
	// Ready keeps only ready tasks, Waiting only waiting ones (task_deps.go).
	Ready, Waiting bool
	// Unassigned keeps only tasks nobody is assigned.
	Unassigned bool
	// Limit is how many to list at most (0: all).
	Limit int
}

func (f TaskFilter) match(t Task) bool {
	return taskMatches(f, t.Status, t.Assignee, t.ParentID) && (!f.Unassigned || t.Assignee == "")
}

// Tasks lists at most f.Limit (0: all) of the tasks that match f, newest
// first, and says whether more match. It reads only the documents it
// returns: the task index (taskIndex) picks them, and each is read again
// and checked against f. Unreadable documents are returned as problems.
func (s *Store) Tasks(f TaskFilter) ([]Task, bool, []error, error) {
	limit := f.Limit
	if f.Status != "" {
		if err := CheckStatus(f.Status); err != nil {
			return nil, false, nil, err
		}
	}
	dir := s.files.CollectionDir(storage.Tasks)
	var out []Task
	var bad []error
	after := ""
	for first := true; ; first = false {
		want := 0 // all
		if limit > 0 {
			want = limit - len(out) + 1 // one more says whether more match
		}
		ids, problems, err := s.taskCandidates(f, after, want)
		if err != nil {
			return nil, false, nil, err
		}
		if first {
			bad = problems
		}
		for _, id := range ids {
			if limit > 0 && len(out) == limit {
				return out, true, bad, nil
			}
			var t Task
			_, err := s.readTask(filepath.Join(dir, id+".json"), &t)
			switch {
			case errors.Is(err, storage.ErrNotFound):
				s.recheckTask(id) // removed since the index looked
				continue
			case err != nil:
				s.recheckTask(id)
				bad = append(bad, err)
				continue
			case !f.match(t):
				s.recheckTask(id) // edited in place since the index looked
				continue
			}
			out = append(out, t.served(s.files.Rel(filepath.Join(dir, id+".json"))))
		}
		if want == 0 || len(ids) < want {
			return out, false, bad, nil
		}
		after = ids[len(ids)-1] // some were passed over: look further
	}
}

// ReportResults are the results a report gives (report_completed), each
// setting a status (reportStatus). A failed task is blocked: a person has
// to look at it.
var ReportResults = []string{"success", "failed", "blocked", resultCancelled}

// resultCancelled is the report of a task cancelled under its session (a
// cancel interrupt): it changes no status, and is refused on a task nobody
// cancelled.
const resultCancelled = "cancelled"

var reportStatus = map[string]string{
	"success":       StatusDone,
	"failed":        StatusBlocked,
	"blocked":       StatusBlocked,
	resultCancelled: StatusCancelled,
}

// ReportChange is the change an assignee's report of its task makes
// (report_completed): the result's status, the summary as the reason, and
// no status change at all when the task is no longer in progress (someone
// else stopped it: an interrupt).
func ReportChange(result, summary string) (TaskChange, error) {
	status, ok := reportStatus[result]
	if !ok {
		return TaskChange{}, storage.CodeErr(storage.CodeInvalidResult, "result %q is invalid: use %s", storage.Clip(result, 40), orList(ReportResults))
	}
	if err := storage.CheckText("summary", summary); err != nil {
		return TaskChange{}, err
	}
	return TaskChange{Status: status, Reason: summary, Result: result, Summary: summary, Report: true}, nil
}

// orList joins words as "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// TaskChange is one change to a task, checked in UpdateTask.
type TaskChange struct {
	Status   string // "" keeps it
	Reason   string // why (blocked reason); required for a change to blocked
	Assignee *string
	Result   string
	Summary  string
	Approval string // ApprovalApproved or ApprovalRejected
	// Title, Priority and Description, when set, replace the task's (a
	// title is trimmed of surrounding spaces; aipm task edit).
	Title       *string
	Priority    *string
	Description *string
	// RequireApproved refuses the change while the task waits for approval
	// (changes that come from chat).
	RequireApproved bool
	// Owner, when set, refuses the change unless the task is assigned to
	// that agent: an agent changes only its own tasks.
	Owner string
	// Report makes Status apply only while the task is in progress: a
	// report after an interrupt records the result and changes no status.
	Report bool
	// Planned refuses the change unless the task is backlog or todo
	// (@@タスク調整, seed 003: checkPlanned).
	Planned bool
	// InProgress refuses the change unless the task is in progress
	// (@@完了報告: only a task session at work can decide on it,
	// checkWorking).
	InProgress bool
	// Blockers changes what the task waits for (DESIGN section 20).
	Blockers *BlockersChange
}

// BlockersChange changes the tasks a task waits for: Set replaces them
// all (nil keeps them), then Add adds and Remove takes away.
type BlockersChange struct {
	Set         *[]string
	Add, Remove []string
}

// check checks the form of the ids the change adds; one to take away is
// taken as the task's file has it (a hand edit may have mistyped it).
func (bc BlockersChange) check() error {
	var errs []error
	if bc.Set != nil {
		errs = append(errs, CheckBlockerIDs("", *bc.Set))
	}
	return errors.Join(append(errs, CheckBlockerIDs("", bc.Add))...)
}

// newBlockers are the blockers of after that before did not have.
func newBlockers(before, after []string) []string {
	var out []string
	for _, b := range after {
		if !slices.Contains(before, b) {
			out = append(out, b)
		}
	}
	return out
}

// apply changes t's blockers, refusing what changes nothing: a task it
// already waits for added, one it does not wait for taken away.
func (bc BlockersChange) apply(t *Task) error {
	blockers := slices.Clone(t.BlockedBy)
	if bc.Set != nil {
		blockers = slices.Clone(*bc.Set)
	}
	for _, a := range bc.Add {
		if slices.Contains(blockers, a) {
			return storage.CodeErr(storage.CodeNothingToChange, "task %s already waits for %s: nothing to change", t.ID, a)
		}
		blockers = append(blockers, a)
	}
	for _, r := range bc.Remove {
		i := slices.Index(blockers, r)
		if i < 0 {
			return storage.CodeErr(storage.CodeNothingToChange, "task %s does not wait for %s: nothing to take away (aipm task show %s lists what it waits for)", t.ID, r, t.ID)
		}
		blockers = slices.Delete(blockers, i, i+1)
	}
	if len(blockers) == 0 {
		blockers = nil
	}
	if !slices.Equal(blockers, t.BlockedBy) {
		t.BlockedBy, t.StartedReady = blockers, false // waiting anew: it starts again when ready
	}
	return nil
}

// check is what a change must satisfy whatever the task: its texts within
// their limits, a known status, and a reason for a change to blocked.
func (ch TaskChange) check(cfg *storage.Config) error {
	if err := errors.Join(storage.CheckText("reason", ch.Reason), storage.CheckText("summary", ch.Summary)); err != nil {
		return err
	}
	if err := ch.checkFields(); err != nil {
		return err
	}
	if ch.Status != "" {
		if err := CheckStatus(ch.Status); err != nil {
			return err
		}
		if !ch.Report { // a report's reason is its summary
			if err := CheckStatusReason(ch.Status, ch.Reason); err != nil {
				return err
			}
		}
	}
	if needsReason(ch.Status) && !ch.Report && strings.TrimSpace(ch.Reason) == "" {
		return storage.CodeErr(storage.CodeReasonRequired, "say why the task is blocked: pass reason")
	}
	if ch.Blockers != nil {
		if err := ch.Blockers.check(); err != nil {
			return err
		}
	}
	if ch.Assignee != nil {
		return storage.CheckAgentRef(cfg, *ch.Assignee, "assignee")
	}
	return nil
}

// CheckStatusReason is the one rule of a status change's reason: it goes
// with blocked or cancelled only. UpdateTask applies it to every change
// (the tools, the CLI, the board); the CLI and the board also call it
// before they open the project, to answer a usage error.
func CheckStatusReason(status, reason string) error {
	if reason != "" && !StopsWork(status) {
		return storage.Kindf(storage.ErrInvalid, "a reason goes with blocked or cancelled, not %s: leave the reason out", status)
	}
	return nil
}

// checkFields checks a new title, priority and description with the
// limits a new task has (CreateTask).
func (ch TaskChange) checkFields() error {
	if ch.Title != nil {
		title := strings.TrimSpace(*ch.Title)
		if title == "" {
			return storage.Kindf(storage.ErrInvalid, "the title is empty: say in a few words what the work is")
		}
		if err := storage.CheckText("title", title); err != nil {
			return err
		}
	}
	if ch.Priority != nil && !slices.Contains(Priorities, *ch.Priority) {
		return storage.Kindf(storage.ErrInvalid, "priority %q is invalid: use one of %s", storage.Clip(*ch.Priority, storage.MaxEchoedID), strings.Join(Priorities, ", "))
	}
	if ch.Description != nil {
		return storage.CheckText("description", *ch.Description)
	}
	return nil
}

// UpdateTask applies change made by `by` under the tasks lock, with the
// status transition checked in one place. If the change interrupts the
// assignee (Interrupts), the interrupt notification is appended after the
// lock is released (rule 4: never two locks at once).
func (s *Store) UpdateTask(ctx context.Context, cfg *storage.Config, id, by string, ch TaskChange) (Task, error) {
	path, err := s.files.DocPath(storage.Tasks, id)
	if err != nil {
		return Task{}, err
	}
	if err := ch.check(cfg); err != nil {
		return Task{}, err
	}
	var before Task
	var tells []taskTell
	var now time.Time
	after, err := storage.UpdateDoc(ctx, s.files, path, storage.ModeFile, func(t *Task, exists bool) error {
		if !exists {
			return storage.Kindf(storage.ErrNotFound, "task %s does not exist: see list_tasks or aipm task list", id)
		}
		before, now = *t, time.Now().UTC()
		before.Untold = slices.Clone(t.Untold)
		var err error
		tells, err = s.changeTask(cfg, t, by, ch, now)
		return err
	})
	if err != nil {
		return Task{}, err
	}
	return s.afterChange(ctx, cfg, path, by, ch, before, after, tells, now)
}

// afterChange is what follows UpdateTask's write of a change (before to
// after) made by `by`, each after the tasks lock is released (rule 4):
// what waits for the task started first (the next agent waits for it),
// then the interrupt of the assignee, the end of the task's delegations,
// an approved completion report passed on, and the messages owed sent.
func (s *Store) afterChange(ctx context.Context, cfg *storage.Config, path, by string, ch TaskChange, before, after Task, tells []taskTell, now time.Time) (Task, error) {
	id := after.ID
	var flowErr error
	if err := s.flowAfter(ctx, cfg, before, after); err != nil {
		flowErr = fmt.Errorf("task %s changed, but what waits for it was not started: %w; aipm watch starts it", id, err)
	}
	t, err := s.tellChange(ctx, path, by, ch, before, after, tells, now)
	return t, errors.Join(flowErr, err)
}

// tellChange is afterChange's telling of a change: the interrupt, the
// delegations ended, a completion report passed on, the messages owed.
func (s *Store) tellChange(ctx context.Context, path, by string, ch TaskChange, before, after Task, tells []taskTell, now time.Time) (Task, error) {
	id := after.ID
	if Interrupts(before, after, by) {
		// An approved @@ブロック報告 carries its reason in the request.
		in := Interruption{Agent: after.Assignee, By: by, Reason: cmp.Or(ch.Reason, after.BlockedReason), Task: &after, StatusChange: true}
		if _, _, err := s.WriteInterrupt(ctx, in); err != nil {
			return after.served(s.files.Rel(path)), fmt.Errorf("task %s changed, but the interrupt for %s was not written: %w", id, after.Assignee, err)
		}
	}
	if after.Status != before.Status && after.Status != StatusInProgress && !Interrupts(before, after, by) {
		// A delegation ends when its task ends (an interrupt ended them above).
		why := fmt.Sprintf("%s set task %s to %s.", cmp.Or(by, HandEdit), after.ID, after.Status)
		if err := s.endTaskDelegations(ctx, after, cmp.Or(by, HandEdit), why); err != nil {
			return after.served(s.files.Rel(path)), fmt.Errorf("task %s changed, but its open delegations were not ended: %w", id, err)
		}
	}
	if req := before.PendingChange; req != nil && after.PendingChange == nil && ch.Approval == ApprovalApproved && req.Marker == MarkerComplete.String() {
		// An approved @@完了報告 changes nothing on the task: it goes to the task session.
		if _, err := s.completionNotice(ctx, after, *req); err != nil {
			return after.served(s.files.Rel(path)), fmt.Errorf("task %s: the completion report was approved, but it did not reach %s's task session: %w", id, after.Assignee, err)
		}
	}
	if len(after.Untold) > 0 {
		var err error
		if after.Untold, err = s.sendTells(ctx, after, tells, now); err != nil {
			return after.served(s.files.Rel(path)), fmt.Errorf("task %s changed, but %w; aipm doctor --repair tells them", id, err)
		}
	}
	return after.served(s.files.Rel(path)), nil
}

// changeTask is UpdateTask's change of t, made by `by` at now, as read
// under the tasks lock: a decision on a pending request or the change
// itself, checked against the rules of who may and, when what it waits for
// changes, the dependency rules; the message that the task ended, and the
// news of a stop to those waiting on it, are written with the change, and
// sent after it (sendTells), so that they are told once, even by a process
// killed in between. Like applyTaskChange it may run more than once.
func (s *Store) changeTask(cfg *storage.Config, t *Task, by string, ch TaskChange, now time.Time) ([]taskTell, error) {
	before := *t
	done, err := applyDecision(cfg, t, by, ch, now)
	if err != nil {
		return nil, err
	}
	if !done {
		if err := applyTaskChange(t, by, ch, now); err != nil {
			return nil, err
		}
	}
	if err := errors.Join(checkStart(cfg, before, *t), checkHumanStop(cfg, before, *t, by), checkCancel(cfg, before, *t, by)); err != nil {
		return nil, err
	}
	if added := newBlockers(before.BlockedBy, t.BlockedBy); len(added) > 0 {
		if err := s.checkDependencies(t.ID, t.ParentID, added); err != nil {
			return nil, err
		}
	}
	tells := endTells(cfg, before, *t, by, now)
	t.Untold = append(t.Untold, tells...)
	news := s.stopNews(cfg, t, by, cmp.Or(ch.Reason, t.BlockedReason), now)
	t.Untold = append(t.Untold, news...)
	return append(tells, news...), nil
}

// checkStart refuses to set a task in progress (from before to after) for
// an assignee that is not an agent of the project (removed from
// config.toml): nobody would start, and nobody would say so.
func checkStart(cfg *storage.Config, before, after Task) error {
	if after.Status != StatusInProgress || before.Status == StatusInProgress || after.Assignee == "" {
		return nil
	}
	if _, ok := cfg.Agent(after.Assignee); !ok {
		return fmt.Errorf("task %s is assigned to %q, who is not an agent of this project: assign it to one first (aipm task assign %s AGENT)", after.ID, storage.Clip(after.Assignee, storage.MaxEchoedID), after.ID)
	}
	return nil
}

// checkHumanStop is the one rule of a human's stop (DESIGN section 11): a
// task a human set to blocked or cancelled (before) leaves that status only
// by a human's change. by is who makes the change: for a marker, its
// sender, so that a marker with a human's authority lifts it too.
func checkHumanStop(c *storage.Config, before, after Task, by string) error {
	if after.Status == before.Status || !StopsWork(before.Status) {
		return nil
	}
	if !stoppedByHuman(c, before) || c.IsHuman(by) {
		return nil
	}
	who := cmp.Or(before.StatusChangedBy, "a human")
	if before.handEdited() || who == HandEdit {
		who = HandEdit
	}
	return storage.CodeErr(storage.CodeStoppedByHuman, "task %s was set to %s by %s, and only a human may change it now: %s cannot; report with report_completed and exit, or ask a human to change it (aipm task status %s STATUS)", before.ID, before.Status, who, by, before.ID)
}

// checkCancel is the one rule of who cancels a task (DESIGN section 11):
// a human, or the task's requester; an agent reports (done or blocked),
// it never cancels.
func checkCancel(c *storage.Config, before, after Task, by string) error {
	if after.Status != StatusCancelled || before.Status == StatusCancelled || c.IsHuman(by) || (by != "" && by == before.Requester) {
		return nil
	}
	return storage.CodeErr(storage.CodeInvalidTransition, "%s may not cancel task %s: an agent never cancels a task (a human or its requester does); report it with report_completed(result=\"blocked\" or \"failed\", summary=why), or ask a human to cancel it", by, before.ID)
}

// stoppedByHuman says whether t's status was set by a human: by a human
// (or anyone not an AI agent of the project) through aipm, or by a hand
// edit of its file.
func stoppedByHuman(c *storage.Config, t Task) bool {
	if t.handEdited() || t.StatusChangedBy == HandEdit {
		return true
	}
	a, ok := c.Agent(t.StatusChangedBy)
	return !ok || a.Type != storage.AgentAI
}

// handEdited says whether t's status, as read, was set by a hand edit of
// its file: one aipm did not write (and allows).
func (t Task) handEdited() bool { return t.AipmStatus != "" && t.Status != t.AipmStatus }

// applyTaskChange applies ch, made by `by` at now, to t as read under the
// tasks lock. It may run more than once (a compare-and-swap retry), so it
// changes nothing but t.
func applyTaskChange(t *Task, by string, ch TaskChange, now time.Time) error {
	if err := ch.checkTask(*t); err != nil {
		return err
	}
	if t.handEdited() {
		t.StatusChangedBy = HandEdit // aipm writes it now: who set it stays known
	}
	applyFields(t, ch)
	if ch.Blockers != nil {
		if err := ch.Blockers.apply(t); err != nil {
			return err
		}
	}
	if ch.Report && ch.Result == resultCancelled && t.Status != StatusCancelled {
		return storage.CodeErr(storage.CodeInvalidResult, "task %s is %s: nobody cancelled it, and an agent never cancels a task; result \"cancelled\" only answers a cancel interrupt: report success, failed or blocked", t.ID, t.Status)
	}
	status := ch.Status
	if ch.Report && t.Status != StatusInProgress {
		status = "" // someone else already stopped it (an interrupt)
	}
	if ch.Approval != "" {
		if err := applyApproval(t, ch.Approval); err != nil {
			return err
		}
		if ch.Approval == ApprovalRejected && status == "" {
			status = StatusCancelled
		}
	}
	if err := applyAssignee(t, ch.Assignee); err != nil {
		return err
	}
	if status != "" {
		if err := applyStatus(t, status, ch.Reason, by, now); err != nil {
			return err
		}
	}
	if ch.Result != "" {
		t.Result = ch.Result
	}
	if ch.Summary != "" {
		t.Summary = ch.Summary
	}
	t.AipmStatus = t.Status // what aipm writes it has checked (a hand edit it allows included)
	t.UpdatedAt = now
	return nil
}

// applyAssignee sets t's assignee to who (nil keeps it); a task in
// progress keeps its own.
func applyAssignee(t *Task, who *string) error {
	if who == nil {
		return nil
	}
	if t.Status == StatusInProgress && *who != t.Assignee {
		return fmt.Errorf("task %s is in progress with %s: block or stop it before reassigning", t.ID, t.Assignee)
	}
	t.Assignee = *who
	return nil
}

// checkTask is what ch asks of the task it changes, as read under the
// tasks lock: its owner, its approval, a planned task (Planned), one in
// progress (InProgress).
func (ch TaskChange) checkTask(t Task) error {
	checks := []struct {
		on    bool
		check func(Task) error
	}{
		{ch.Owner != "", func(t Task) error { return checkOwner(t, ch.Owner) }},
		{ch.RequireApproved, checkApproved},
		{ch.Planned, checkPlanned},
		{ch.InProgress, checkWorking},
	}
	for _, c := range checks {
		if !c.on {
			continue
		}
		if err := c.check(t); err != nil {
			return err
		}
	}
	return nil
}

// applyFields sets the title, priority and description ch replaces.
func applyFields(t *Task, ch TaskChange) {
	if ch.Title != nil {
		t.Title = strings.TrimSpace(*ch.Title)
	}
	if ch.Priority != nil {
		t.Priority = *ch.Priority
	}
	if ch.Description != nil {
		t.Description = *ch.Description
	}
}

// checkOwner is the one check that agent may change task t: it must be
// assigned to it.
func checkOwner(t Task, agent string) error {
	if t.Assignee != agent {
		return storage.CodeErr(storage.CodeNotTaskAssignee, "task %s is assigned to %q, not to you: you may change only your own tasks", t.ID, t.Assignee)
	}
	return nil
}

// checkApproved refuses a change that needs an approved task (changes that
// come from chat) while t waits for approval or was rejected.
func checkApproved(t Task) error {
	if t.ApprovalStatus != ApprovalApproved {
		return storage.CodeErr(storage.CodeTaskPendingApproval, "task %s is %s: a human must approve it first (aipm task approve %s)", t.ID, t.ApprovalStatus, t.ID)
	}
	return nil
}

// applyApproval records a human's decision on a task waiting for approval.
func applyApproval(t *Task, approval string) error {
	if approval != ApprovalApproved && approval != ApprovalRejected {
		return fmt.Errorf("approval %q is invalid", approval)
	}
	if t.ApprovalStatus != ApprovalPending {
		return fmt.Errorf("task %s is %s, not waiting for approval", t.ID, t.ApprovalStatus)
	}
	t.ApprovalStatus = approval
	return nil
}

// applyStatus moves t to status, through the one transition check.
func applyStatus(t *Task, status, reason, by string, now time.Time) error {
	if err := checkTransition(*t, status); err != nil {
		return err
	}
	if status == StatusInProgress && t.Assignee == "" {
		return fmt.Errorf("task %s has no assignee: assign it before starting it", t.ID)
	}
	t.Status, t.StatusChangedBy, t.StatusChangedAt = status, by, now
	t.BlockedReason = ""
	if status == StatusInProgress && len(t.BlockedBy) > 0 {
		t.StartedReady = true // started: it goes in progress by itself again only once it waits anew
	}
	if status == StatusBlocked {
		t.BlockedReason = reason
	}
	return nil
}
