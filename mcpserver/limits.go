package mcpserver

import "fmt"

// pageLimit is how many items one call of a listing tool returns: def when
// the call names no limit, and at most max. Each tool's input schema states
// both in its limit's description ("(default 50, at most 500)"), which
// TestStatedLimits checks against the tool's spec.
type pageLimit struct{ def, max int }

// The page limits of the listing tools, each named in its tool's spec.
var (
	taskPage                = pageLimit{def: 50, max: 500} // list_tasks
	notificationPage        = pageLimit{def: 50, max: 500} // get_notifications
	pendingMessagePage      = pageLimit{def: 20, max: 100} // get_pending_messages
	conversationMessagePage = pageLimit{def: 50, max: 200} // get_conversation_messages
)

// of returns the page size for a call's limit argument (0 when the call
// left it out), or the invalid_limit error that says the range.
func (p pageLimit) of(limit int) (int, error) {
	switch {
	case limit == 0:
		return p.def, nil
	case limit < 0 || limit > p.max:
		return 0, toolErr("invalid_limit", fmt.Sprintf("limit %d is out of range: use 1 to %d", limit, p.max))
	}
	return limit, nil
}
