package mcpserver

import "aipm/fsstore"

// Level is what a tool requires of the caller's session (DESIGN section 5).
type Level int

const (
	None          Level = iota // no session: authenticate, help
	Authenticated              // any live session
	TaskOnly                   // a task session
	ChatOnly                   // a chat session
)

func (l Level) String() string {
	return [...]string{"none", "authenticated", "taskOnly", "chatOnly"}[l]
}

// levels is the one table of tool levels: every tool of DESIGN section 5,
// built or not yet, so that refusals and help can explain each of them.
var levels = map[string]Level{
	"authenticate": None,
	"help":         None,

	"logout":            Authenticated,
	"get_next_action":   Authenticated,
	"get_notifications": Authenticated,
	"get_my_task":       Authenticated,
	"get_task":          Authenticated,
	"list_tasks":        Authenticated,
	"request_task":      Authenticated,

	"report_completed":          TaskOnly,
	"update_task_status":        TaskOnly,
	"delegate_to_chat_session":  TaskOnly,
	"get_task_conversations":    TaskOnly,
	"get_conversation_messages": TaskOnly,

	"get_pending_messages":         ChatOnly,
	"send_message":                 ChatOnly,
	"respond_chat":                 ChatOnly,
	"start_conversation":           ChatOnly,
	"end_conversation":             ChatOnly,
	"send_conversation_message":    ChatOnly,
	"respond_conversation_message": ChatOnly,
	"report_delegation_completed":  ChatOnly,
	"notify_task_session":          ChatOnly,
	"update_task_from_chat":        ChatOnly,
	"start_task_from_chat":         ChatOnly,
}

// passesInterrupt lists the tools that run even while an interrupt is
// unread, so that the agent can comply (DESIGN section 6).
var passesInterrupt = map[string]bool{
	"get_notifications":  true,
	"report_completed":   true,
	"logout":             true,
	"update_task_status": true,
}

// allows says whether a session of purpose may call a tool of level l.
func (l Level) allows(purpose string) bool {
	switch l {
	case TaskOnly:
		return purpose == fsstore.PurposeTask
	case ChatOnly:
		return purpose == fsstore.PurposeChat
	}
	return true
}

// instead says what a refused caller should do.
func (l Level) instead(tool string) string {
	switch l {
	case TaskOnly:
		return tool + " belongs to task sessions; in a chat session, talk to the agent who asked, or call get_next_action"
	case ChatOnly:
		return tool + " belongs to chat sessions (a chat session is required: a task session cannot send messages or hold conversations); from a task session call delegate_to_chat_session(target_agent_id, purpose) and your chat session does the talking"
	}
	return "call authenticate first and pass its session_token"
}
