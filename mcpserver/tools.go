package mcpserver

import "github.com/modelcontextprotocol/go-sdk/mcp"

// toolSpec is one tool: its name (whose level is in levels.go) and the
// function that registers it.
type toolSpec struct {
	name string
	add  func(*mcp.Server, *Server)
}

// tools is the one list of the tools this version serves.
func tools() []toolSpec {
	return []toolSpec{
		{"authenticate", addAuthenticate},
		{"help", addHelp},
		{"logout", addLogout},
		{"get_next_action", addGetNextAction},
		{"get_notifications", addGetNotifications},
		{"get_my_task", addGetMyTask},
		{"get_task", addGetTask},
		{"list_tasks", addListTasks},
		{"update_task_status", addUpdateTaskStatus},
		{"report_completed", addReportCompleted},
		{"send_message", addSendMessage},
		{"get_pending_messages", addGetPendingMessages},
		{"respond_chat", addRespondChat},
		{"start_conversation", addStartConversation},
		{"end_conversation", addEndConversation},
		{"send_conversation_message", addSendConversationMessage("send_conversation_message")},
		{"respond_conversation_message", addSendConversationMessage("respond_conversation_message")},
		{"get_conversation_messages", addGetConversationMessages},
		{"request_task", addRequestTask},
		{"delegate_to_chat_session", addDelegate},
		{"report_delegation_completed", addReportDelegation},
		{"get_task_conversations", addGetTaskConversations},
		{"notify_task_session", addNotifyTaskSession},
		{"update_task_from_chat", addUpdateTaskFromChat},
		{"start_task_from_chat", addStartTaskFromChat},
	}
}

// readOnly and mutating are the annotations every tool sets.
var (
	readOnly = &mcp.ToolAnnotations{ReadOnlyHint: true}
	mutating = &mcp.ToolAnnotations{ReadOnlyHint: false}
)

// Session is the argument every authenticated tool takes.
type Session struct {
	SessionToken string `json:"session_token" jsonschema:"the token authenticate returned"`
}
