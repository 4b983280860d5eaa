package mcpserver

import (
	"context"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// deliver is the delivery part of the gate (DESIGN sections 4 rule 6 and
// 6). Every call of a session first acknowledges what the session was
// handed on its previous call (read means received: a session that dies
// before its next call leaves that batch unread, to be delivered again and
// marked redelivered). Then it counts the notifications that concern this
// session and looks for an interrupt that stops it. It returns that count,
// and a result that replaces the call when the call must not run: an
// interrupt (except for the tools that let the agent comply), or
// notifications that cannot be read (fail closed: the call is refused with
// path:line, nothing is marked read; logout still runs).
func (s *Server) deliver(ctx context.Context, call *mcp.CallToolRequest, ses fsstore.Session) (unread int, stop *mcp.CallToolResult) {
	tool := call.Params.Name
	if !s.acks.clear(ses.ID) {
		if err := s.store.Acknowledge(ctx, ses.Agent, ses.ID, readsStream(tool, ses)...); err != nil {
			s.log.Error("acknowledge", "agent", ses.Agent, "session", ses.ID, "err", err)
		} else if !handsBatch[tool] {
			s.acks.set(ses.ID, true)
		}
	}
	if handsBatch[tool] {
		s.acks.set(ses.ID, false) // it may hand the session a batch now
	}
	intr, unread, err := s.store.Interrupt(ctx, ses)
	switch {
	case err != nil && tool == "logout":
		return -1, nil
	case err != nil:
		s.log.Error("read notifications", "agent", ses.Agent, "err", err)
		return 0, refusal(call, toolErr("notifications_unreadable", fmt.Sprintf("%s did not run: your notifications cannot be read, and one of them may be an interrupt: %v. Ask a human to run aipm doctor --repair, then call again.", tool, err)))
	case intr != nil && !passesInterrupt[tool]:
		return unread, interruptNotice(call, intr)
	}
	return unread, nil
}

// unreadCount is the number of unread notifications that concern the
// session, after what it was just handed; -1 if they cannot be read.
func (s *Server) unreadCount(ctx context.Context, ses fsstore.Session) int {
	unread, err := s.store.SessionNotifications(ctx, ses, true)
	if err != nil {
		s.log.Error("read notifications", "agent", ses.Agent, "err", err)
		return -1
	}
	return len(unread)
}

// readsStream names the stream a tool reads as the session: that read
// acknowledges the session's previous batch of it in its own write, so the
// gate leaves it out (one document write per get_pending_messages instead
// of two). get_notifications is not listed: with mark_as_read=false it
// only peeks, and must not leave the previous batch unacknowledged.
func readsStream(tool string, _ fsstore.Session) []string {
	if tool == "get_pending_messages" {
		return []string{fsstore.StreamChat}
	}
	return nil
}

// handsBatch lists the tools that hand a session a batch to acknowledge.
var handsBatch = map[string]bool{"get_pending_messages": true, "get_notifications": true}

// acks remembers the sessions that, as far as this process knows, hold no
// unacknowledged batch, so that their calls (send_message, say) skip
// reading read.json. A session's first call in this process always checks,
// so a client that moved here from another process is acknowledged too.
type acks struct {
	mu sync.Mutex
	m  map[string]bool
}

func (a *acks) clear(session string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.m[session]
}

func (a *acks) set(session string, clear bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]bool{}
	}
	if clear {
		a.m[session] = true
	} else {
		delete(a.m, session)
	}
}
