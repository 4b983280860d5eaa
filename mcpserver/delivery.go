package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// deliver is the delivery part of the gate (DESIGN sections 4 rule 6 and
// 6). Every call of a session first settles what the session was handed
// before, and may make its answer the one that carries a batch
// (links.begin: the rule is links'). Then it counts the notifications that
// concern this session and looks for an interrupt that stops it. It
// returns a result that replaces the call when the call must not run:
// notifications that cannot be read (fail closed: the call is refused with
// path:line, nothing is marked read; logout still runs), or, as intr, an
// interrupt that stops the call (except for the tools that let the agent
// comply), for the gate to show (showInterrupt). What each tool lets
// through is in its spec (toolSpec). An error means the call ended (its
// context). ack is the acknowledgement the call carries (its ack argument).
func (s *Server) deliver(ctx context.Context, l *link, call *mcp.CallToolRequest, spec toolSpec, ses fsstore.Session, ack string) (stop *mcp.CallToolResult, intr *fsstore.Notification, err error) {
	tool := call.Params.Name
	kind := callKind{tool: tool, hands: spec.handsBatch, reads: spec.readsUnread, readStreams: spec.readStreams(ses.Purpose), complies: spec.passesInterrupt, ack: ack}
	if err := s.links.begin(ctx, l, ses, kind); err != nil {
		return nil, nil, err
	}
	unread, err := s.store.Interrupt(ctx, ses)
	switch {
	case err != nil && spec.passesUnreadable:
		return nil, nil, nil
	case err != nil:
		s.log.Error("read notifications", "agent", ses.Agent, "err", err)
		return refusal(call, toolErr("notifications_unreadable", fmt.Sprintf("%s did not run: your notifications cannot be read, and one of them may be an interrupt: %v. Ask a human to run aipm doctor --repair, then call again.", tool, err))), nil, nil
	case unread.Interrupt != nil && !spec.passesInterrupt:
		return nil, unread.Interrupt, nil
	}
	return nil, nil, nil
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
