package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ChangeRequest is a change to a task asked through chat (@@タスク調整,
// @@タスク開始, @@ブロック報告, @@完了報告) by a sender without authority
// over the task (DESIGN section 11): it waits on the task
// (Task.PendingChange) for a human's aipm task approve or reject, like a
// task request. A completion report (@@完了報告) changes nothing on the
// task: approved, it reaches the task session (completionNotice).
type ChangeRequest struct {
	By          string  `json:"by"`
	Marker      string  `json:"marker"`
	Status      string  `json:"status,omitempty"`
	Description *string `json:"description,omitempty"`
	// BlockedBy, when set, replaces the tasks the task waits for
	// (@@タスク調整 with blocked_by).
	BlockedBy *[]string `json:"blockedBy,omitempty"`
	// Reason is why the task is blocked (@@ブロック報告).
	Reason string `json:"reason,omitempty"`
	// Summary is what the sender reports done (@@完了報告).
	Summary         string    `json:"summary,omitempty"`
	SourceMessageID string    `json:"sourceMessageId,omitempty"`
	At              time.Time `json:"at"`
}

// ChatChange is the result of a task change made from chat: the task, and
// whether the change waits for approval and whom it asked.
type ChatChange struct {
	Task           Task
	Pending        bool
	AskedToApprove []string
}

// mayChange is the one rule of who may change task t through chat at once:
// its creator (requester), an ancestor of its assignee, or a config
// approver (a human manager). A marker is the sender's instruction, so the
// sender's authority counts, not the receiver's.
func mayChange(c *storage.Config, t Task, by string) bool {
	return by != "" && (by == t.Requester || slices.Contains(c.Ancestors(t.Assignee), by) || c.IsApprover(by))
}

// changeApprovers are the humans who decide a change request on t: the
// human ancestors of its assignee and the managers, never the one who asked
// (if there is nobody, any other human).
func changeApprovers(c *storage.Config, t Task, by string) []string {
	out := c.HumanAncestors(t.Assignee)
	var humans []string
	for _, a := range c.Agents {
		if a.Type == storage.AgentHuman && a.ID != by {
			humans = append(humans, a.ID)
			if a.Role == storage.RoleManager {
				out = append(out, a.ID)
			}
		}
	}
	out = slices.DeleteFunc(out, func(h string) bool { return h == by })
	if len(out) == 0 {
		out = humans
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// changeOf is the TaskChange a change request makes.
func (r ChangeRequest) changeOf(owner string) TaskChange {
	ch := TaskChange{Status: r.Status, Reason: r.Reason, Description: r.Description, Owner: owner, RequireApproved: true,
		Planned: r.Marker == MarkerAdjust.String(), InProgress: r.Marker == MarkerComplete.String()}
	if r.BlockedBy != nil {
		ch.Blockers = &BlockersChange{Set: r.BlockedBy}
	}
	return ch
}

// requestChange records req on task t, checked now as it would be applied
// (so a change that could never apply is refused at once), and asks the
// approvers by a system chat message.
func (ct ChatTasks) requestChange(ctx context.Context, cfg *storage.Config, t Task, req ChangeRequest) (ChatChange, error) {
	s := ct.s
	trial := t
	if err := applyTaskChange(&trial, req.By, req.changeOf(t.Assignee), time.Now().UTC()); err != nil {
		return ChatChange{}, transitionErr(err)
	}
	if req.BlockedBy != nil {
		if err := s.checkDependencies(t.ID, t.ParentID, *req.BlockedBy); err != nil {
			return ChatChange{}, err // checked again when a human approves it
		}
	}
	path, err := s.files.DocPath(storage.Tasks, t.ID)
	if err != nil {
		return ChatChange{}, err
	}
	req.At = time.Now().UTC()
	after, err := storage.UpdateDoc(ctx, s.files, path, storage.ModeFile, func(cur *Task, exists bool) error {
		if !exists {
			return storage.Kindf(storage.ErrNotFound, "task %s does not exist: see list_tasks", t.ID)
		}
		cur.PendingChange = &req
		return nil
	})
	if err != nil {
		return ChatChange{}, err
	}
	out := ChatChange{Task: after, Pending: true, AskedToApprove: []string{}}
	what := req.Describe()
	msg := fmt.Sprintf("%s asked %s through chat to %s task %s %q, which waits for your approval.", req.By, after.Assignee, what, after.ID, after.Title)
	var failed []string
	out.AskedToApprove, failed = s.askToApprove(ctx, cfg, changeApprovers(cfg, after, req.By), after.ID, msg)
	if len(failed) > 0 {
		return out, fmt.Errorf("the change to task %s waits for approval, but the request did not reach %s", after.ID, strings.Join(failed, ", "))
	}
	return out, nil
}

// Describe says what a change request asks, for the approvers (their
// system message, aipm task show).
func (r ChangeRequest) Describe() string {
	var parts []string
	switch {
	case r.Marker == MarkerComplete.String():
		parts = append(parts, fmt.Sprintf("pass a completion report (summary %q) to the task session of", storage.Clip(r.Summary, 200)))
	case r.Status == StatusBlocked:
		parts = append(parts, fmt.Sprintf("block (reason %q)", storage.Clip(r.Reason, 200)))
	case r.Status != "":
		parts = append(parts, "set the status to "+r.Status)
	}
	if r.Description != nil {
		parts = append(parts, fmt.Sprintf("set the description to %q", storage.Clip(*r.Description, 200)))
	}
	if r.BlockedBy != nil {
		waits := "nothing"
		if len(*r.BlockedBy) > 0 {
			waits = strings.Join(*r.BlockedBy, ", ")
		}
		parts = append(parts, "make it wait for "+waits)
	}
	return strings.Join(parts, " and ")
}

// decideChange turns an approval decision on a task with a pending change
// request into the change to apply: the request's change when approved,
// nothing when rejected; either way the request is cleared.
func decideChange(t *Task, approval string) (TaskChange, error) {
	req := t.PendingChange
	switch approval {
	case ApprovalApproved:
		t.PendingChange = nil
		return req.changeOf(""), nil
	case ApprovalRejected:
		t.PendingChange = nil
		return TaskChange{}, nil
	}
	return TaskChange{}, fmt.Errorf("approval %q is invalid", approval)
}

// decidesChange reports whether an approval decision on t is about its
// pending change request (the task itself is not waiting for approval).
func decidesChange(t Task, ch TaskChange) bool {
	return ch.Approval != "" && t.PendingChange != nil && t.ApprovalStatus != ApprovalPending
}

// checkChangeApprover is the one check that by may decide t's pending
// change request.
func checkChangeApprover(c *storage.Config, t Task, by string) error {
	approvers := changeApprovers(c, t, t.PendingChange.By)
	if slices.Contains(approvers, by) {
		return nil
	}
	return storage.CodeErr(storage.CodeNotApprover, "%s may not approve or reject the change %s asked for task %s: ask %s to decide it (aipm task approve %s --as %s, or aipm task reject)",
		by, t.PendingChange.By, t.ID, strings.Join(approvers, " or "), t.ID, firstOr(approvers, "a manager"))
}

func firstOr(list []string, def string) string {
	if len(list) == 0 {
		return def
	}
	return list[0]
}

// applyDecision checks and applies an approval decision (ch.Approval) that
// by makes on t, as read under the tasks lock: on a pending change request
// it applies or drops the change; on a task waiting for approval it only
// checks that by may decide, and applyTaskChange records the decision.
// done says the decision was applied here.
func applyDecision(c *storage.Config, t *Task, by string, ch TaskChange, now time.Time) (done bool, err error) {
	if ch.Approval == "" {
		return false, nil
	}
	if !decidesChange(*t, ch) {
		return false, checkApprover(c, *t, by)
	}
	if err := checkChangeApprover(c, *t, by); err != nil {
		return true, err
	}
	change, err := decideChange(t, ch.Approval)
	if err != nil {
		return true, err
	}
	return true, applyTaskChange(t, by, change, now)
}
