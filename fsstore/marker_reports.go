package fsstore

import (
	"aipm/fsstore/internal/storage"
	"cmp"
	"context"
	"fmt"
	"strings"
)

// completionKeyPrefix begins the key of every completion report
// (completionNotice): what tells one among a task session's notifications.
const completionKeyPrefix = "completion:"

// chatTaskID is the task a marker report names: id, or else the agent's
// task in progress.
func (s *Store) chatTaskID(agent, id string) (string, error) {
	if id != "" {
		return id, nil
	}
	if id = s.taskInProgress(agent); id == "" {
		return "", storage.CodeErr(storage.CodeTaskRequired, "you have no task in progress: pass task_id (list_tasks shows yours)")
	}
	return id, nil
}

// BlockTask sets agent's task id (default: its task in progress) to
// blocked for reason on behalf of by, the sender of an @@ブロック報告
// message (msgID), through UpdateTask's one transition check; blocking a
// task in progress interrupts its task session (pause). A sender without
// authority over the task (mayChange) only asks for it, and the change
// waits for approval.
func (ct ChatTasks) BlockTask(ctx context.Context, cfg *storage.Config, agent, by, id, reason, msgID string) (ChatChange, error) {
	s := ct.s
	id, err := s.chatTaskID(agent, id)
	if err != nil {
		return ChatChange{}, err
	}
	t, err := s.checkChatTask(agent, id)
	if err != nil {
		return ChatChange{}, err
	}
	ch := TaskChange{Status: StatusBlocked, Reason: reason, Owner: agent, RequireApproved: true}
	if strings.TrimSpace(reason) == "" {
		return ChatChange{}, storage.CodeErr(storage.CodeReasonRequired, "reason is empty: pass why the task is blocked (ask %s to write it after @@ブロック報告:)", by)
	}
	if err := ch.check(cfg); err != nil {
		return ChatChange{}, err
	}
	if !mayChange(cfg, t, by) {
		return ct.requestChange(ctx, cfg, t, ChangeRequest{By: by, Marker: MarkerBlock.String(), Status: StatusBlocked, Reason: reason, SourceMessageID: msgID})
	}
	t, err = s.UpdateTask(ctx, cfg, id, by, ch)
	return ChatChange{Task: t}, transitionErr(err)
}

// checkWorking is the one check that a completion report (@@完了報告) may
// go to task t's session: t must be in progress, or no task session is at
// work on it to decide.
func checkWorking(t Task) error {
	if t.Status != StatusInProgress {
		return storage.CodeErr(storage.CodeTaskNotInProgress, "task %s is %s: @@完了報告 goes to the task session working on a task in progress, and none is; ask a human to set its status with aipm task status %s", t.ID, t.Status, t.ID)
	}
	return nil
}

// ReportCompletion passes the completion report of by, the sender of an
// @@完了報告 message (msgID), on agent's task id (default: its task in
// progress) to agent's task session, which decides: it changes no status.
// A sender without authority over the task only asks for it to be passed
// on, which waits for approval (UpdateTask passes it on once approved).
func (ct ChatTasks) ReportCompletion(ctx context.Context, cfg *storage.Config, agent, by, id, summary, msgID string) (ChatChange, Notification, error) {
	s := ct.s
	id, err := s.chatTaskID(agent, id)
	if err != nil {
		return ChatChange{}, Notification{}, err
	}
	t, err := s.checkChatTask(agent, id)
	if err != nil {
		return ChatChange{}, Notification{}, err
	}
	if err := storage.CheckText("summary", summary); err != nil {
		return ChatChange{}, Notification{}, err
	}
	if err := checkWorking(t); err != nil {
		return ChatChange{}, Notification{}, err
	}
	req := ChangeRequest{By: by, Marker: MarkerComplete.String(), Summary: summary, SourceMessageID: msgID}
	if !mayChange(cfg, t, by) {
		c, err := ct.requestChange(ctx, cfg, t, req)
		return c, Notification{}, err
	}
	n, err := s.completionNotice(ctx, t, req)
	if err != nil {
		return ChatChange{}, Notification{}, err // nothing was passed on
	}
	return ChatChange{Task: t}, n, nil
}

// completionNotice is the one writer of a completion report: a
// notification about task t for its assignee, which only a task session
// sees (Concerns), keyed by the marked message so that it is written once.
// It says what happened; what to do about it is CompletionDecision.
func (s *Store) completionNotice(ctx context.Context, t Task, req ChangeRequest) (Notification, error) {
	summary := cmp.Or(strings.TrimSpace(req.Summary), "no summary given")
	msg := fmt.Sprintf("%s reports your task %s (%q) complete (@@完了報告): %s", req.By, t.ID, t.Title, summary)
	return s.Notify(ctx, t.Assignee, Notification{Type: storage.NotifyInfo, TaskID: t.ID, From: req.By, Key: completionKeyPrefix + t.ID + ":" + cmp.Or(req.SourceMessageID, storage.NewID(storage.PrefixNotification)), Message: msg})
}

// CompletionDecision is what a task session is told to do about a
// completion report (get_notifications, get_next_action's work answer).
const CompletionDecision = `Decide: if the work is done, call report_completed(result="success", summary=what you did); if it is not, keep working.`

// IsCompletionReport says whether n is a completion report (completionNotice).
func IsCompletionReport(n Notification) bool {
	return n.Type == storage.NotifyInfo && n.TaskID != "" && strings.HasPrefix(n.Key, completionKeyPrefix)
}

// completionReports are the unread completion reports (completionNotice)
// about task that ses may read, peeking: get_next_action's work answer
// tells the task session to decide on them.
func (s *Store) completionReports(ctx context.Context, ses Session, task string) ([]Notification, error) {
	out, _, err := s.readNotifications(ctx, ses, storage.ReadOptions{Peek: true}, func(n Notification) bool {
		return n.TaskID == task && IsCompletionReport(n)
	})
	return out, err
}
