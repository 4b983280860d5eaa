package mcpserver

import (
	"time"

	"aipm/fsstore"
)

// Every tool argument and result uses one naming style: snake_case. The
// files under .ai-pm keep their own format (camelCase, seed 000); these are
// the views of their records that tool results carry. Lists are never null
// (their schemas say "array", not ["null", "array"]: see tidy).

// nonNil is list, or an empty list for nil: a list field without omitempty
// is [] in JSON, never null.
func nonNil[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}

// TaskView is a task as tools show it.
type TaskView struct {
	ID              string    `json:"id"`
	Title           string    `json:"title"`
	Description     string    `json:"description,omitempty"`
	Status          string    `json:"status"`
	Priority        string    `json:"priority"`
	Assignee        string    `json:"assignee,omitempty"`
	ParentID        string    `json:"parent_id,omitempty"`
	Requester       string    `json:"requester,omitempty"`
	ApprovalStatus  string    `json:"approval_status"`
	StatusChangedBy string    `json:"status_changed_by,omitempty"`
	StatusChangedAt time.Time `json:"status_changed_at"`
	BlockedReason   string    `json:"blocked_reason,omitempty"`
	Result          string    `json:"result,omitempty"`
	Summary         string    `json:"summary,omitempty"`
	// BlockedBy are the tasks it waits for (DESIGN section 20); WaitingFor,
	// in get_task's answer, is what it still waits for of them and of its
	// subtasks.
	BlockedBy  []string  `json:"blocked_by,omitempty" jsonschema:"the ids of the tasks it waits for"`
	WaitingFor string    `json:"waiting_for,omitempty" jsonschema:"get_task: what it still waits for, with their statuses"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

func taskView(t fsstore.Task) TaskView {
	return TaskView{
		ID: t.ID, Title: t.Title, Description: t.Description, Status: t.Status, Priority: t.Priority,
		Assignee: t.Assignee, ParentID: t.ParentID, Requester: t.Requester, ApprovalStatus: t.ApprovalStatus,
		StatusChangedBy: t.StatusChangedBy, StatusChangedAt: t.StatusChangedAt, BlockedReason: t.BlockedReason,
		Result: t.Result, Summary: t.Summary, BlockedBy: t.BlockedBy, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
	}
}

// taskRef is the view of an optional task.
func taskRef(t *fsstore.Task) *TaskView {
	if t == nil {
		return nil
	}
	v := taskView(*t)
	return &v
}

func taskViews(ts []fsstore.Task) []TaskView {
	out := make([]TaskView, 0, len(ts))
	for _, t := range ts {
		out = append(out, taskView(t))
	}
	return out
}

// MessageView is a chat message as tools show it.
type MessageView struct {
	ID         string `json:"id"`
	SenderID   string `json:"sender_id"`
	ReceiverID string `json:"receiver_id,omitempty"`
	// ReceiverIDs and TargetGroup: a message to several receivers.
	ReceiverIDs    []string `json:"receiver_ids,omitempty"`
	TargetGroup    string   `json:"target_group,omitempty"`
	Content        string   `json:"content"`
	CreatedAt      string   `json:"created_at"`
	ConversationID string   `json:"conversation_id,omitempty"`
	RelatedTaskID  string   `json:"related_task_id,omitempty"`
	Kind           string   `json:"kind,omitempty" jsonschema:"system for messages aipm itself wrote; empty otherwise"`
	Redelivered    bool     `json:"redelivered,omitempty" jsonschema:"true if it may have reached a client before, in an answer not known to be read"`
}

func messageViews(ms []fsstore.Message) []MessageView {
	out := make([]MessageView, 0, len(ms))
	for _, m := range ms {
		out = append(out, MessageView{
			ID: m.ID, SenderID: m.SenderID, ReceiverID: m.ReceiverID, ReceiverIDs: m.ReceiverIDs, TargetGroup: m.TargetGroup, Content: m.Content, CreatedAt: m.CreatedAt,
			ConversationID: m.ConversationID, RelatedTaskID: m.RelatedTaskID, Kind: m.Kind, Redelivered: m.Redelivered,
		})
	}
	return out
}

// NotificationView is a notification as get_notifications shows it, with
// what to do about it (seed 004: type, action, message, instruction).
type NotificationView struct {
	ID          string    `json:"id"`
	Type        string    `json:"type" jsonschema:"interrupt, info or new_message"`
	Action      string    `json:"action" jsonschema:"an interrupt: pause (your task was blocked), cancel (it was cancelled) or stop; decide: a completion report on your task; read: information"`
	Message     string    `json:"message"`
	Instruction string    `json:"instruction" jsonschema:"what to do now, naming the exact next tool call"`
	TaskID      string    `json:"task_id,omitempty"`
	From        string    `json:"from,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	Redelivered bool      `json:"redelivered,omitempty" jsonschema:"true if it may have reached a client before, in an answer not known to be read"`
	// MessageID and SenderID, on a new_message notification (seed 000).
	MessageID string `json:"message_id,omitempty"`
	SenderID  string `json:"sender_id,omitempty"`
}

func notificationViews(ns []fsstore.Notification, purpose string) []NotificationView {
	out := make([]NotificationView, 0, len(ns))
	for _, n := range ns {
		v := NotificationView{ID: n.ID, Type: n.Type, Message: n.Message, TaskID: n.TaskID, From: n.From, CreatedAt: n.CreatedAt, Redelivered: n.Redelivered,
			Action: "read", Instruction: "Nothing to do beyond reading it; carry on."}
		switch {
		case n.Type == fsstore.NotifyInterrupt:
			v.Action = interruptAction(n.Kind)
			v.Instruction = fsstore.InterruptInstruction(purpose, n.Kind)
		case fsstore.IsCompletionReport(n):
			v.Action, v.Instruction = "decide", fsstore.CompletionDecision
		}
		out = append(out, v)
	}
	return out
}

// DelegationView is a delegation as tools show it.
type DelegationView struct {
	ID              string    `json:"id"`
	AgentID         string    `json:"agent_id" jsonschema:"the owner: its task session made it, its chat session carries it out"`
	TargetAgentID   string    `json:"target_agent_id"`
	TaskID          string    `json:"task_id"`
	Purpose         string    `json:"purpose"`
	Context         string    `json:"context,omitempty"`
	Status          string    `json:"status" jsonschema:"pending, processing, completed or failed"`
	Result          string    `json:"result,omitempty"`
	ConversationIDs []string  `json:"conversation_ids,omitempty" jsonschema:"conversations started to carry it out"`
	CreatedAt       time.Time `json:"created_at"`
	CompletedAt     time.Time `json:"completed_at,omitzero"`
}

func delegationView(d fsstore.Delegation) DelegationView {
	return DelegationView{
		ID: d.ID, AgentID: d.Agent, TargetAgentID: d.Target, TaskID: d.TaskID, Purpose: d.Purpose, Context: d.Context,
		Status: d.Status, Result: d.Result, ConversationIDs: d.Conversations, CreatedAt: d.CreatedAt, CompletedAt: d.CompletedAt,
	}
}

func delegationViews(ds []fsstore.Delegation) []DelegationView {
	out := make([]DelegationView, 0, len(ds))
	for _, d := range ds {
		out = append(out, delegationView(d))
	}
	return out
}

// ConversationView is a conversation as tools show it.
type ConversationView struct {
	ID            string `json:"id"`
	InitiatorID   string `json:"initiator_id"`
	ParticipantID string `json:"participant_id"`
	// ParticipantIDs: a group conversation's participants, in turn order.
	ParticipantIDs []string  `json:"participant_ids,omitempty"`
	Purpose        string    `json:"purpose,omitempty"`
	State          string    `json:"state" jsonschema:"pending, active, terminating, ended or expired"`
	Turns          int       `json:"turns"`
	MaxTurns       int       `json:"max_turns"`
	TaskID         string    `json:"task_id,omitempty"`
	EndReason      string    `json:"end_reason,omitempty"`
	EndedBy        string    `json:"ended_by,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	EndedAt        time.Time `json:"ended_at,omitzero"`
}

func conversationViews(cs []fsstore.Conversation) []ConversationView {
	out := make([]ConversationView, 0, len(cs))
	for _, c := range cs {
		out = append(out, ConversationView{
			ID: c.ID, InitiatorID: c.Initiator, ParticipantID: c.Participant, ParticipantIDs: c.Participants, Purpose: c.Purpose, State: c.State,
			Turns: c.Turns, MaxTurns: c.MaxTurns, TaskID: c.TaskID, EndReason: c.EndReason, EndedBy: c.EndedBy,
			CreatedAt: c.CreatedAt, EndedAt: c.EndedAt,
		})
	}
	return out
}
