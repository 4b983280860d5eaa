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
// session and looks for an interrupt that stops it. It returns a result
// that replaces the call when the call must not run: an
// interrupt (except for the tools that let the agent comply), or
// notifications that cannot be read (fail closed: the call is refused with
// path:line, nothing is marked read; logout still runs). What each tool
// lets through is in its spec (toolSpec). An interrupt that stops the call
// is returned as intr, for the gate to show (showInterrupt).
func (s *Server) deliver(ctx context.Context, call *mcp.CallToolRequest, spec toolSpec, ses fsstore.Session) (stop *mcp.CallToolResult, intr *fsstore.Notification) {
	tool := call.Params.Name
	if !s.acks.clear(ses.ID) {
		// Skipped while another request carries a batch of the session
		// (parallel calls over HTTP): it is read once that answer is out.
		s.links.ifFree(ses.ID, func() {
			// An interrupt shown in a replaced answer is read by a call
			// that complies with it; until then it stops every other.
			kept, err := s.store.AcknowledgeCall(ctx, ses.Agent, ses.ID, tool, spec.passesInterrupt, spec.readStreams(ses.Purpose)...)
			if err != nil {
				s.log.Error("acknowledge", "agent", ses.Agent, "session", ses.ID, "err", err)
			} else if !spec.handsBatch && !kept {
				s.acks.set(ses.ID, true)
			}
		})
	}
	if spec.handsBatch {
		s.acks.set(ses.ID, false) // it may hand the session a batch now
	}
	unread, err := s.store.Interrupt(ctx, ses)
	switch {
	case err != nil && spec.passesUnreadable:
		return nil, nil
	case err != nil:
		s.log.Error("read notifications", "agent", ses.Agent, "err", err)
		return refusal(call, toolErr("notifications_unreadable", fmt.Sprintf("%s did not run: your notifications cannot be read, and one of them may be an interrupt: %v. Ask a human to run aipm doctor --repair, then call again.", tool, err))), nil
	case unread.Interrupt != nil && !spec.passesInterrupt:
		return nil, unread.Interrupt
	}
	return nil, nil
}

// unreadAfter is what the notification line counts once the tool ran
// (after what a marksRead tool just handed the session): the unread
// notifications that concern the session and, of them, those its model was
// not told of; a Count of -1 if they cannot be read.
func (s *Server) unreadAfter(ctx context.Context, ses fsstore.Session, spec toolSpec) fsstore.Unread {
	if spec.marksRead {
		ns, _, err := s.store.SessionNotifications(ctx, ses, true, 0)
		if err != nil {
			s.log.Error("read notifications", "agent", ses.Agent, "err", err)
			return fsstore.Unread{Count: -1}
		}
		return fsstore.Unread{Count: len(ns), New: len(ns)}
	}
	u, err := s.store.Interrupt(ctx, ses) // cached while nothing changed
	if err != nil {
		s.log.Error("read notifications", "agent", ses.Agent, "err", err)
		return fsstore.Unread{Count: -1}
	}
	return u
}

// lineFor is the notification line of a response to session ses once
// the tool ran (DESIGN sections 6 and 15): unread notifications it was not
// told of are announced, and recorded as told first, so that neither a
// client hook nor a later line announces them again; if another process
// told them in between, the line says they were told. A response the
// client will never see (it cancelled the call) records nothing. New
// messages (the new_message notice) ride only on a call that was not
// refused: a refused call changes nothing, not even what was told.
func (s *Server) lineFor(ctx context.Context, ses fsstore.Session, spec toolSpec, refused bool) string {
	if cur, err := s.store.Session(ses.ID); err == nil {
		ses = cur // what hooks told while the tool ran (a wait) counts
	}
	u := s.unreadAfter(ctx, ses, spec)
	var msgs fsstore.NewMessages
	if !refused { // a refused call changes nothing, not even what was told
		msgs = s.newMessagesAfter(ctx, ses, spec)
	}
	if ctx.Err() != nil {
		return notificationLine(u, fsstore.NewMessages{})
	}
	n := fsstore.Notices{From: ses.Surfaced, To: ses.Surfaced}
	if u.New > 0 && u.Through != (fsstore.Mark{}) {
		n.To.Notifications = u.Through
	}
	if msgs.Count() > 0 {
		n.Messages, n.To.Chat = msgs.Messages, msgs.Through
	}
	told, err := s.store.Surface(ctx, ses, n, "notification line", nil)
	switch {
	case err != nil:
		// Not recorded: announced anyway, better twice than never.
		s.log.Warn("record what the notification line told", "session", ses.ID, "err", err)
	case !told:
		u.New, msgs = 0, fsstore.NewMessages{}
	}
	return notificationLine(u, msgs)
}

// newMessagesAfter is the new_message notice of the response (DESIGN
// section 6): the chat session's unread messages it was not told of, unless
// the tool's own answer speaks of them (toldOfMessages).
func (s *Server) newMessagesAfter(ctx context.Context, ses fsstore.Session, spec toolSpec) fsstore.NewMessages {
	if spec.toldOfMessages {
		return fsstore.NewMessages{}
	}
	msgs, err := s.store.NewMessagesFor(ctx, ses)
	if err != nil {
		s.log.Error("read new messages", "agent", ses.Agent, "err", err)
	}
	return msgs
}

// readStreams lists the stream the tool reads as the session, which the
// gate leaves out of what it acknowledges (see toolSpec.readsStream).
func (t toolSpec) readStreams(purpose string) []string {
	switch t.readsStream {
	case "":
		return nil
	case fsstore.StreamNotifications:
		return []string{fsstore.NotificationStream(purpose)}
	}
	return []string{t.readsStream}
}

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
