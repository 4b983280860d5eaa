package fsstore

import (
	"errors"
	"slices"

	"aipm/fsstore/internal/storage"
)

// StartStatuses are the statuses a new task may start in, in workflow
// order: planned (backlog, todo) or at work (in_progress). A task never
// starts stopped or finished: it reaches blocked, done or cancelled by a
// change, which checks the transition and that a block says why
// (TaskChange.check), so that no task is blocked without a reason.
var StartStatuses = []string{StatusBacklog, StatusTodo, StatusInProgress}

// plannedStatuses are the statuses of planned work, not started: a task
// waiting for approval starts in one, and they are the only ones
// @@タスク調整 changes (checkPlanned).
var plannedStatuses = []string{StatusBacklog, StatusTodo}

// AdjustStatuses are the statuses @@タスク調整 may set
// (update_task_from_chat), in workflow order: where a planned task may go
// (the transitions from plannedStatuses), but a status that needs a reason
// (needsReason), which the marker does not give: @@ブロック報告 blocks a
// task, with its reason.
var AdjustStatuses = adjustStatuses()

// adjustStatuses computes AdjustStatuses from the transitions.
func adjustStatuses() []string {
	var out []string
	for _, to := range Statuses {
		reached := slices.ContainsFunc(plannedStatuses, func(from string) bool { return slices.Contains(transitions[from], to) })
		if reached && !needsReason(to) {
			out = append(out, to)
		}
	}
	return out
}

// needsReason is the one rule of which status a change must say why it
// sets (TaskChange.check): blocked, so that the task's assignee and its
// humans know what it waits for.
func needsReason(status string) bool { return status == StatusBlocked }

// CheckStartStatus is the one rule of the status a new task starts in: a
// task status (CheckStatus) that is one of StartStatuses. CreateTask
// applies it (NewTask.checkStatus); the CLI also calls it before it opens
// the project, to answer a usage error.
func CheckStartStatus(status string) error {
	if err := CheckStatus(status); err != nil {
		return err
	}
	if !slices.Contains(StartStatuses, status) {
		return storage.CodeErr(storage.CodeInvalidStatus, "a new task cannot start as %s: use %s, then change its status", status, orList(StartStatuses))
	}
	return nil
}

// checkStatus is CreateTask's check of the status in starts in
// (CheckStartStatus) and of what that status asks of the rest of in: a
// task in progress has an assignee, and needs no approval (a task waiting
// for approval cannot be started).
func (in NewTask) checkStatus() error {
	if err := CheckStartStatus(in.Status); err != nil {
		return err
	}
	switch {
	case in.Status != StatusInProgress:
		return nil
	case in.NeedsApproval:
		return storage.CodeErr(storage.CodeInvalidStatus, "a task that waits for approval cannot start in progress: create it as %s, and start it once a human approves it", orList(plannedStatuses))
	case in.Assignee == "":
		return errors.New("a task in progress needs an assignee: pass one")
	}
	return nil
}
