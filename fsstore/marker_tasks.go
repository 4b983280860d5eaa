package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// TaskRequest is what request_task asks for. Requester is who wants the
// work: the sender of the marked message (chat session) or the caller
// (task session). The task is assigned to Agent; it waits for the tasks of
// BlockedBy (DESIGN section 20).
type TaskRequest struct {
	Agent, Requester                       string
	Title, Description, Priority, ParentID string
	SourceMessageID                        string
	BlockedBy                              []string
}

// RequestedTask is the result of RequestTask.
type RequestedTask struct {
	Task Task `json:"task"`
	// AskedToApprove are the humans told (by a system chat message) that
	// the task waits for their approval.
	AskedToApprove []string `json:"asked_to_approve"`
}

// RequestTask creates a backlog task assigned to in.Agent (DESIGN section
// 11): approved at once when the requester is one of the agent's ancestors
// in the config, otherwise pending_approval, and the humans it asks
// (askedToApprove, recorded on the task: only they decide it) get a system
// chat message saying how to approve or reject it.
func (ct ChatTasks) RequestTask(ctx context.Context, cfg *storage.Config, in TaskRequest) (RequestedTask, error) {
	s := ct.s
	approved := slices.Contains(cfg.Ancestors(in.Agent), in.Requester)
	var asked []string
	if !approved {
		asked = askedToApprove(cfg, in.Requester, in.Agent)
	}
	t, err := s.CreateTask(ctx, cfg, NewTask{
		Title: in.Title, Description: in.Description, Priority: in.Priority, ParentID: in.ParentID,
		Assignee: in.Agent, Requester: in.Requester, Status: StatusBacklog, NeedsApproval: !approved,
		AskedToApprove: asked, SourceMessageID: in.SourceMessageID, BlockedBy: in.BlockedBy,
	})
	if err != nil {
		return RequestedTask{}, err
	}
	out := RequestedTask{Task: t, AskedToApprove: []string{}}
	if approved {
		return out, nil
	}
	msg := fmt.Sprintf("%s asked %s for a task, which waits for your approval: %s %q.", in.Requester, in.Agent, t.ID, t.Title)
	var failed []string
	out.AskedToApprove, failed = s.askToApprove(ctx, cfg, asked, t.ID, msg)
	if len(failed) > 0 {
		return out, fmt.Errorf("task %s was created (pending_approval), but the request for approval did not reach %s", t.ID, strings.Join(failed, ", "))
	}
	return out, nil
}

// checkChatTask is the check shared by the chat tools that change a task:
// it must be the agent's own, and not waiting for approval.
func (s *Store) checkChatTask(agent, id string) (Task, error) {
	if id == "" {
		return Task{}, storage.CodeErr(storage.CodeTaskRequired, "task_id is empty: pass the tsk_ id of the task (list_tasks shows yours)")
	}
	if err := storage.CheckID(storage.PrefixTask, id); err != nil {
		return Task{}, storage.CodeErr(storage.CodeTaskNotFound, "%v", err)
	}
	t, err := s.Task(id)
	if err != nil {
		return Task{}, storage.CodeErr(storage.CodeTaskNotFound, "%v", err)
	}
	if err := checkOwner(t, agent); err != nil {
		return Task{}, err
	}
	return t, checkApproved(t)
}

// ChatAdjust is what @@タスク調整 changes (nil, "": kept): the
// description, the status, the tasks it waits for (replaced).
type ChatAdjust struct {
	Description *string
	Status      string
	BlockedBy   *[]string
}

// UpdateTask changes agent's task id on behalf of `by` (the sender
// of the marked message), through UpdateTask's one transition check and
// the dependency rules; a sender without authority over the task
// (mayChange) only asks for the change, which waits for approval.
func (ct ChatTasks) UpdateTask(ctx context.Context, cfg *storage.Config, agent, by, id string, adj ChatAdjust) (ChatChange, error) {
	s := ct.s
	t, err := s.checkChatTask(agent, id)
	if err != nil {
		return ChatChange{}, err
	}
	if adj.Description == nil && adj.Status == "" && adj.BlockedBy == nil {
		return ChatChange{}, storage.CodeErr(storage.CodeNothingToChange, "pass description, status, blocked_by or several of them")
	}
	if needsReason(adj.Status) {
		return ChatChange{}, storage.CodeErr(storage.CodeReasonRequired, "@@タスク調整 cannot set %s, which needs a reason it does not carry: report the block with report_block_from_chat (the @@ブロック報告: marker)", adj.Status)
	}
	req := ChangeRequest{By: by, Marker: MarkerAdjust.String(), Status: adj.Status, Description: adj.Description, BlockedBy: adj.BlockedBy}
	if err := req.changeOf(agent).check(cfg); err != nil {
		return ChatChange{}, err
	}
	if !mayChange(cfg, t, by) {
		return ct.requestChange(ctx, cfg, t, req)
	}
	t, err = s.UpdateTask(ctx, cfg, id, by, req.changeOf(agent))
	return ChatChange{Task: t}, transitionErr(err)
}

// checkPlanned is the one check that @@タスク調整 may change task t (seed
// 003): only while it is backlog or todo, so that chat never rewrites work
// under way (its task session would not be told), ends it, or reopens it.
func checkPlanned(t Task) error {
	if !slices.Contains(plannedStatuses, t.Status) {
		return storage.CodeErr(storage.CodeTaskNotAdjustable, "task %s is %s: @@タスク調整 changes only backlog or todo tasks; ask a human to change it with aipm task status %s (or aipm interrupt for work in progress)", t.ID, t.Status, t.ID)
	}
	return nil
}

// StartTask moves agent's task id to in_progress on behalf of by; a
// sender without authority over the task only asks for it (UpdateTask).
func (ct ChatTasks) StartTask(ctx context.Context, cfg *storage.Config, agent, by, id string) (ChatChange, error) {
	s := ct.s
	t, err := s.checkChatTask(agent, id)
	if err != nil {
		return ChatChange{}, err
	}
	if !mayChange(cfg, t, by) {
		return ct.requestChange(ctx, cfg, t, ChangeRequest{By: by, Marker: MarkerStart.String(), Status: StatusInProgress})
	}
	t, err = s.UpdateTask(ctx, cfg, id, by, TaskChange{Status: StatusInProgress, Owner: agent, RequireApproved: true})
	return ChatChange{Task: t}, transitionErr(err)
}

// NotifyTaskSession leaves message for agent's task session (and only it)
// about task id: related, or else the agent's task in progress.
func (ct ChatTasks) NotifyTaskSession(ctx context.Context, agent, from, message, related string) (Notification, error) {
	s := ct.s
	if strings.TrimSpace(message) == "" {
		return Notification{}, storage.CodeErr(storage.CodeMessageRequired, "message is empty: say what the task session should know")
	}
	if err := storage.CheckText("content", message); err != nil {
		return Notification{}, err
	}
	if related == "" {
		related = s.taskInProgress(agent)
		if related == "" {
			return Notification{}, storage.CodeErr(storage.CodeTaskRequired, "you have no task in progress: pass related_task_id (list_tasks shows yours)")
		}
	} else if t, err := s.Task(related); err != nil {
		return Notification{}, storage.CodeErr(storage.CodeTaskNotFound, "%v", err)
	} else if t.Assignee != agent {
		return Notification{}, storage.CodeErr(storage.CodeNotTaskAssignee, "task %s is assigned to %q, not to you: notify_task_session reaches only your own task session", related, t.Assignee)
	}
	return s.Notify(ctx, agent, Notification{Type: storage.NotifyInfo, TaskID: related, From: from, Message: message})
}

// transitionErr gives a refused task change the code invalid_transition,
// keeping a code it already has.
func transitionErr(err error) error {
	var ce *storage.CodeError
	if err == nil || errors.As(err, &ce) {
		return err
	}
	return storage.CodeErr(storage.CodeInvalidTransition, "%v", err)
}

// ChatTasks are the task operations a chat session makes on behalf of the
// sender of a marked message (DESIGN section 11): a request, an adjustment,
// a start, a note to the task session.
type ChatTasks struct{ s *Store }

// FromChat is the project's task operations a chat session makes under a marker.
func (s *Store) FromChat() ChatTasks { return ChatTasks{s: s} }
