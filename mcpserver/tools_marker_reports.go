package mcpserver

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// markerInstruction is what a get_pending_messages answer holding a marked
// message tells the model: for each marker of the latest message someone
// sent (the one the marker tools look at), the exact call it asks for,
// then the markers' help.
func markerInstruction(msgs []fsstore.Message) string {
	var b strings.Builder
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Kind == fsstore.KindSystem || m.SenderID == fsstore.SystemSender || m.ReceiverID != "" {
			continue
		}
		for _, u := range fsstore.ParseMarkers(m.Content) {
			b.WriteString(markerCall(m.SenderID, u))
			b.WriteString(" ")
		}
		break
	}
	return b.String() + markerHelp
}

// markerCall names the call one marker of a message from sender asks for.
// @@タスク確認 authorizes no operation (reading tasks is harmless, so
// anyone may ask): the text after it, if any, is the sender's question.
func markerCall(sender string, u fsstore.MarkerUse) string {
	if u.Marker == fsstore.MarkerCheck {
		question := ""
		if u.Body != "" {
			question = fmt.Sprintf(" (they ask: %q)", fsstore.Clip(u.Body, 200))
		}
		return fmt.Sprintf("%s asks for the state of your tasks with %s%s: call list_tasks(assignee=your agent id), then answer %s with respond_chat, giving each open task's id, title and status.",
			sender, u.Marker, question, sender)
	}
	return fmt.Sprintf("%s's message carries the marker %s, so call %s.", sender, u.Marker, u.Marker.Tool())
}

// ReportBlockFromChatIn is report_block_from_chat's arguments (@@ブロック報告:).
type ReportBlockFromChatIn struct {
	Session
	TaskID string `json:"task_id,omitempty"`
	Reason string `json:"reason,omitempty"`
}

func reportBlockFromChatTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "report_block_from_chat",
			Description: "Block one of your tasks. Needs @@ブロック報告:. (chat)",
			Annotations: mutating,
		},
		level: ChatOnly,
		add:   addReportBlockFromChat,
	}
}

func addReportBlockFromChat(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in ReportBlockFromChatIn) (*mcp.CallToolResult, ChatTaskOut, error) {
		c, sender, notice, err := s.markedChange(ctx, fsstore.MarkerBlock, func(cfg *fsstore.Config, ses fsstore.Session, msg fsstore.Message, body string) (fsstore.ChatChange, error) {
			return s.store.FromChat().BlockTask(ctx, cfg, ses.Agent, msg.SenderID, in.TaskID, cmp.Or(in.Reason, body), msg.ID)
		})
		if err != nil {
			return nil, ChatTaskOut{}, err
		}
		out := chatTaskOut(c, sender, notice)
		if !c.Pending {
			out.Instruction = fmt.Sprintf("Task %s is blocked (%s); if your task session was working on it, it was told to stop. Tell %s, then call get_next_action.", c.Task.ID, c.Task.BlockedReason, sender) + out.Instruction
		}
		return nil, out, nil
	})
}

// ReportCompletionFromChatIn is report_completion_from_chat's arguments (@@完了報告).
type ReportCompletionFromChatIn struct {
	Session
	TaskID  string `json:"task_id,omitempty"`
	Summary string `json:"summary,omitempty"`
}

// CompletionReportOut is the result of a completion reported through chat.
type CompletionReportOut struct {
	Task           *TaskView `json:"task"`
	ReportStatus   string    `json:"report_status" jsonschema:"passed_on (your task session decides), or pending_approval when a human must approve passing it on"`
	NotificationID string    `json:"notification_id,omitempty" jsonschema:"the notification your task session reads"`
	AskedToApprove []string  `json:"asked_to_approve,omitempty"`
	Instruction    string    `json:"instruction"`
}

func reportCompletionFromChatTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "report_completion_from_chat",
			Description: "Tell your task session a task is done; it decides. Needs @@完了報告. (chat)",
			Annotations: mutating,
		},
		level: ChatOnly,
		add:   addReportCompletionFromChat,
	}
}

func addReportCompletionFromChat(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in ReportCompletionFromChatIn) (*mcp.CallToolResult, CompletionReportOut, error) {
		ses := sessionFrom(ctx)
		cfg, err := s.config()
		if err != nil {
			return nil, CompletionReportOut{}, err
		}
		var c fsstore.ChatChange
		var n fsstore.Notification
		var sender string
		var notice error // the request waits for approval, but asking someone failed
		err = s.store.WithMarker(ctx, ses, fsstore.MarkerComplete, func(msg fsstore.Message, body string) (string, error) {
			summary := in.Summary
			if summary == "" {
				summary = body
			}
			var err error
			sender = msg.SenderID
			c, n, err = s.store.FromChat().ReportCompletion(ctx, cfg, ses.Agent, msg.SenderID, in.TaskID, summary, msg.ID)
			if err == nil && !c.Pending {
				return n.ID, nil
			}
			return changed(c, err, &notice)
		})
		if err != nil {
			return nil, CompletionReportOut{}, fromStore(err, "task_not_found")
		}
		out := CompletionReportOut{Task: taskRef(&c.Task), ReportStatus: "passed_on", NotificationID: n.ID,
			Instruction: fmt.Sprintf("Your task session on %s will decide whether it is done; its status is unchanged. Tell %s it was passed on, then call get_next_action.", c.Task.ID, sender)}
		if c.Pending {
			out.ReportStatus, out.NotificationID, out.AskedToApprove = fsstore.ApprovalPending, "", c.AskedToApprove
			out.Instruction = fmt.Sprintf("%s may not report task %s complete at once (only its creator, the assignee's ancestors or a manager may): the report waits for approval by %v. Tell %s, then call get_next_action.",
				sender, c.Task.ID, c.AskedToApprove, sender)
		}
		if notice != nil {
			out.Instruction += " Note: " + notice.Error()
		}
		return nil, out, nil
	})
}
