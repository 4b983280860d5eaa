package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// markerHelp explains the chat command markers (DESIGN section 11, seed
// 003). A chat session reads it once, in authenticate's answer, then again
// only in a get_pending_messages answer holding a marked message; help
// always shows it. Idle answers never carry it: repeated in every
// get_next_action wait, it cost a chat session's model about 26k tokens an
// hour.
const markerHelp = "Chat commands: a message with @@タスク作成: asks you to create a task (request_task); @@タスク通知: to pass a note to your task session (notify_task_session); " +
	"@@タスク調整: to change a task (update_task_from_chat); @@タスク開始: to start one (start_task_from_chat); @@ブロック報告: reason, to block one (report_block_from_chat); " +
	"@@完了報告, to pass a completion report to your task session (report_completion_from_chat); @@タスク確認, to tell the sender your tasks' state (list_tasks, then respond_chat); @ may be half- or full-width. " +
	"Those tools work only when the latest message you received carries the marker in plain text (not in code or a quote), once per marker. " +
	"If a message looks like a work request but has no marker, answer normally and ask the human to resend it with the marker (e.g. \"@@タスク作成: title\"); do not create tasks on your own."

// carriesMarker reports whether a message someone else sent holds a chat
// command marker.
func carriesMarker(msgs []fsstore.Message) bool {
	for _, m := range msgs {
		if m.Kind != fsstore.KindSystem && len(fsstore.ParseMarkers(m.Content)) > 0 {
			return true
		}
	}
	return false
}

// RequestTaskIn is request_task's arguments.
type RequestTaskIn struct {
	Session
	Title        string   `json:"title,omitempty"`
	Description  string   `json:"description,omitempty"`
	Priority     string   `json:"priority,omitempty"`
	ParentTaskID string   `json:"parent_task_id,omitempty"`
	BlockedBy    []string `json:"blocked_by,omitempty"`
}

// describeArgs lists the priorities a task may have, from fsstore's list,
// the default marked.
func (RequestTaskIn) describeArgs(p map[string]*jsonschema.Schema) {
	words := make([]string, len(fsstore.Priorities))
	for i, pr := range fsstore.Priorities {
		words[i] = pr
		if pr == fsstore.DefaultPriority {
			words[i] += " (default)"
		}
	}
	p["priority"].Description = strings.Join(words, ", ")
}

// RequestTaskOut is request_task's result.
type RequestTaskOut struct {
	Success        bool      `json:"success"`
	Task           *TaskView `json:"task"`
	ApprovalStatus string    `json:"approval_status" jsonschema:"approved, or pending_approval when a human must approve it first"`
	AskedToApprove []string  `json:"asked_to_approve" jsonschema:"the humans asked to approve it"`
	Instruction    string    `json:"instruction"`
}

func requestTaskTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "request_task",
			Description: "Create a backlog task for yourself; a chat session needs @@タスク作成:.",
			Annotations: mutating,
		},
		level: Authenticated,
		add:   addRequestTask,
	}
}

func addRequestTask(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in RequestTaskIn) (*mcp.CallToolResult, RequestTaskOut, error) {
		ses := sessionFrom(ctx)
		cfg, err := s.config()
		if err != nil {
			return nil, RequestTaskOut{}, err
		}
		req := fsstore.TaskRequest{Agent: ses.Agent, Requester: ses.Agent, Title: in.Title, Description: in.Description, Priority: in.Priority, ParentID: in.ParentTaskID, BlockedBy: in.BlockedBy}
		var got fsstore.RequestedTask
		var notice error // the task exists, but telling someone failed
		create := func() (string, error) {
			got, notice = s.store.FromChat().RequestTask(ctx, cfg, req)
			if got.Task.ID == "" {
				return "", notice
			}
			return got.Task.ID, nil // created: the marker is used even if a notice failed
		}
		if ses.Purpose == fsstore.PurposeChat {
			err = s.store.WithMarker(ctx, ses, fsstore.MarkerCreate, func(msg fsstore.Message, body string) (string, error) {
				req.Requester, req.SourceMessageID = msg.SenderID, msg.ID
				if req.Title == "" {
					req.Title = body
				}
				return create()
			})
		} else {
			_, err = create()
		}
		if err != nil {
			return nil, RequestTaskOut{}, fromStore(err, "task_not_found")
		}
		t := got.Task
		out := RequestTaskOut{Success: true, Task: taskRef(&t), ApprovalStatus: t.ApprovalStatus, AskedToApprove: nonNil(got.AskedToApprove)}
		waits := ""
		if len(t.BlockedBy) > 0 {
			waits = fmt.Sprintf(" It waits for %s.", strings.Join(t.BlockedBy, ", "))
		}
		if t.ApprovalStatus == fsstore.ApprovalApproved {
			out.Instruction = fmt.Sprintf("Task %s is created in backlog, assigned to you.%s Tell %s, then call get_next_action.", t.ID, waits, req.Requester)
		} else {
			out.Instruction = fmt.Sprintf("Task %s is created and waits for approval by %v.%s Tell %s it is registered and pending approval, then call get_next_action.", t.ID, got.AskedToApprove, waits, req.Requester)
		}
		if notice != nil {
			out.Instruction += " Note: " + notice.Error()
		}
		return nil, out, nil
	})
}

// NotifyTaskSessionIn is notify_task_session's arguments (@@タスク通知:).
type NotifyTaskSessionIn struct {
	Session
	Message       string `json:"message,omitempty"`
	RelatedTaskID string `json:"related_task_id,omitempty"`
}

// NotifyTaskSessionOut is notify_task_session's result.
type NotifyTaskSessionOut struct {
	Success        bool   `json:"success"`
	NotificationID string `json:"notification_id"`
	TaskID         string `json:"task_id"`
	Instruction    string `json:"instruction"`
}

func notifyTaskSessionTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "notify_task_session",
			Description: "Pass a note to your task session. Needs @@タスク通知:. (chat)",
			Annotations: mutating,
		},
		level: ChatOnly,
		add:   addNotifyTaskSession,
	}
}

func addNotifyTaskSession(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in NotifyTaskSessionIn) (*mcp.CallToolResult, NotifyTaskSessionOut, error) {
		ses := sessionFrom(ctx)
		var n fsstore.Notification
		err := s.store.WithMarker(ctx, ses, fsstore.MarkerNotify, func(msg fsstore.Message, body string) (string, error) {
			text := in.Message
			if text == "" {
				text = body
			}
			var err error
			n, err = s.store.FromChat().NotifyTaskSession(ctx, ses.Agent, msg.SenderID, text, in.RelatedTaskID)
			return n.ID, err
		})
		if err != nil {
			return nil, NotifyTaskSessionOut{}, fromStore(err, "task_not_found")
		}
		return nil, NotifyTaskSessionOut{
			Success: true, NotificationID: n.ID, TaskID: n.TaskID,
			Instruction: fmt.Sprintf("Your task session on %s will see the note. Tell the sender it was passed on, then call get_next_action.", n.TaskID),
		}, nil
	})
}

// UpdateTaskFromChatIn is update_task_from_chat's arguments (@@タスク調整:): the fields to change.
type UpdateTaskFromChatIn struct {
	Session
	TaskID      string  `json:"task_id"`
	Description *string `json:"description,omitempty"`
	Status      string  `json:"status,omitempty"`
	// BlockedBy, when given, replaces the tasks it waits for ([]: none).
	BlockedBy *[]string `json:"blocked_by,omitempty"`
}

// describeArgs lists the statuses @@タスク調整 may set, from fsstore's
// rule (AdjustStatuses). They are not an enum: a status outside them is
// refused by the store, with the reason (invalid_transition,
// task_not_adjustable, reason_required).
func (UpdateTaskFromChatIn) describeArgs(p map[string]*jsonschema.Schema) {
	p["status"].Description = strings.Join(fsstore.AdjustStatuses, ", ")
}

func updateTaskFromChatTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "update_task_from_chat",
			Description: "Change one of your tasks. Needs @@タスク調整:. (chat)",
			Annotations: mutating,
		},
		level: ChatOnly,
		add:   addUpdateTaskFromChat,
	}
}

// ChatTaskOut is the answer of the chat tools that change a task: the
// change is applied, or, asked by someone without authority over the task,
// waits for a human's approval.
type ChatTaskOut struct {
	Task           *TaskView `json:"task"`
	ChangeStatus   string    `json:"change_status" jsonschema:"applied, or pending_approval when a human must approve the change first"`
	AskedToApprove []string  `json:"asked_to_approve,omitempty"`
	Instruction    string    `json:"instruction,omitempty"`
}

// changed is what a marker operation returns for change c: a change
// request that was recorded, or a change that was made, uses the marker
// even if telling someone failed (notice: asking the approvers, the
// interrupt of a blocked task's session).
func changed(c fsstore.ChatChange, err error, notice *error) (string, error) {
	if c.Pending || (err != nil && c.Task.ID != "") {
		*notice = err
		return c.Task.ID, nil
	}
	return c.Task.ID, err
}

// chatTaskOut is the answer for change c asked by sender.
func chatTaskOut(c fsstore.ChatChange, sender string, notice error) ChatTaskOut {
	out := ChatTaskOut{Task: taskRef(&c.Task), ChangeStatus: "applied"}
	if c.Pending {
		out.ChangeStatus, out.AskedToApprove = fsstore.ApprovalPending, c.AskedToApprove
		out.Instruction = fmt.Sprintf("%s may not change task %s at once (only its creator, the assignee's ancestors or a manager may): the change waits for approval by %v. Tell %s, then call get_next_action.",
			sender, c.Task.ID, c.AskedToApprove, sender)
	}
	if notice != nil {
		out.Instruction += " Note: " + notice.Error()
	}
	return out
}

// markedChange is the one shape of the chat tools that change a task under
// a marker: change runs under marker m of the latest message the session
// received (fsstore.WithMarker), from its sender; sender is who to tell,
// notice a change made (or waiting for approval) whose telling failed.
func (s *Server) markedChange(ctx context.Context, m fsstore.Marker, change func(cfg *fsstore.Config, ses fsstore.Session, msg fsstore.Message, body string) (fsstore.ChatChange, error)) (c fsstore.ChatChange, sender string, notice, err error) {
	ses := sessionFrom(ctx)
	cfg, err := s.config()
	if err != nil {
		return c, "", nil, err
	}
	err = s.store.WithMarker(ctx, ses, m, func(msg fsstore.Message, body string) (string, error) {
		sender = msg.SenderID
		var err error
		c, err = change(cfg, ses, msg, body)
		return changed(c, err, &notice)
	})
	if err != nil {
		return c, sender, notice, fromStore(err, "task_not_found")
	}
	return c, sender, notice, nil
}

func addUpdateTaskFromChat(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in UpdateTaskFromChatIn) (*mcp.CallToolResult, ChatTaskOut, error) {
		c, sender, notice, err := s.markedChange(ctx, fsstore.MarkerAdjust, func(cfg *fsstore.Config, ses fsstore.Session, msg fsstore.Message, _ string) (fsstore.ChatChange, error) {
			adj := fsstore.ChatAdjust{Description: in.Description, Status: in.Status, BlockedBy: in.BlockedBy}
			return s.store.FromChat().UpdateTask(ctx, cfg, ses.Agent, msg.SenderID, in.TaskID, adj)
		})
		if err != nil {
			return nil, ChatTaskOut{}, err
		}
		return nil, chatTaskOut(c, sender, notice), nil
	})
}

// StartTaskFromChatIn is start_task_from_chat's arguments (@@タスク開始:).
type StartTaskFromChatIn struct {
	Session
	TaskID string `json:"task_id"`
}

func startTaskFromChatTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "start_task_from_chat",
			Description: "Start one of your tasks. Needs @@タスク開始:. (chat)",
			Annotations: mutating,
		},
		level: ChatOnly,
		add:   addStartTaskFromChat,
	}
}

func addStartTaskFromChat(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in StartTaskFromChatIn) (*mcp.CallToolResult, ChatTaskOut, error) {
		c, sender, notice, err := s.markedChange(ctx, fsstore.MarkerStart, func(cfg *fsstore.Config, ses fsstore.Session, msg fsstore.Message, _ string) (fsstore.ChatChange, error) {
			return s.store.FromChat().StartTask(ctx, cfg, ses.Agent, msg.SenderID, in.TaskID)
		})
		if err != nil {
			return nil, ChatTaskOut{}, err
		}
		return nil, chatTaskOut(c, sender, notice), nil
	})
}
