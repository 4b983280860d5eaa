package mcpserver

import (
	"aipm/fsstore"
)

// Level is what a tool requires of the caller's session (DESIGN section 5);
// each tool's spec (tools.go) names its level.
type Level int

// The levels, from none to the narrowest (DESIGN section 5).
const (
	None          Level = iota // no session: authenticate, help
	Authenticated              // any live session
	TaskOnly                   // a task session
	ChatOnly                   // a chat session
)

func (l Level) String() string {
	return [...]string{"none", "authenticated", "taskOnly", "chatOnly"}[l]
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
