package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"aipm/fsstore"
)

// gate wraps every tools/call (DESIGN sections 5 and 6): a server that
// cannot serve (Unavailable) answers every call with why, unknown tools are
// refused, the session is resolved and its level checked, an unread
// interrupt replaces the response of every tool but the few that let the
// agent comply, and every authenticated response carries the notification
// line. How results are built is in results.go. A call the client
// cancelled ends with the cancellation, never with a result.
func (s *Server) gate() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
			call, ok := req.(*mcp.CallToolRequest)
			if !ok {
				return next(ctx, method, req)
			}
			if s.unavailable != "" {
				return refusal(call, toolErr("server_unavailable", s.unavailable)), nil
			}
			// The request the call came in (links.join): over HTTP the call
			// ends when its request does (the client went away).
			ctx, link, unlink := s.links.join(ctx, call)
			defer unlink()
			if link == nil {
				return nil, ctx.Err() // its request is over
			}
			// The call's context ends when the client cancels the call
			// (notifications/cancelled, also sent on a client's timeout) or
			// the connection ends. The tool's ctx.Err() would otherwise
			// become an error result, with the notification line added
			// below: a cancellation is not the tool's failure, and the client
			// wants no answer. The SDK sends none for a call the client
			// cancelled, whatever is returned here (CancelFromPeer in
			// third_party/go-sdk/internal/jsonrpc2/conn.go).
			defer func() {
				if cerr := ctx.Err(); cerr != nil {
					res, err = nil, cerr
				}
			}()
			name := call.Params.Name
			spec, known := lookupTool(name)
			if !known {
				return refusal(call, toolErr("unknown_tool", fmt.Sprintf("there is no tool %q: call help for the tools you can use", fsstore.Clip(name, 64)))), nil
			}
			if err := checkArguments(call.Params.Arguments); err != nil {
				return refusal(call, err), nil
			}
			call.Params.Arguments = withoutClientArguments(call.Params.Arguments)
			if spec.level == None {
				res, err = explained(name)(next(ctx, method, req))
				if r, ok := res.(*mcp.CallToolResult); ok && err == nil && !r.IsError {
					s.noticeForNewSession(ctx, call, r)
				}
				return res, err
			}
			ses, ack, refused := s.callerSession(ctx, call, spec)
			if refused != nil {
				return refused, nil
			}
			stop, intr, err := s.deliver(ctx, link, call, spec, ses, ack)
			switch {
			case err != nil:
				return nil, err
			case intr != nil:
				return s.showInterrupt(ctx, link, call, ses, intr, ack), nil
			case stop != nil:
				return stop, nil
			}
			callCtx, ended := withWaitEnd(withAck(withSession(ctx, ses), s.links.ackOf(link)))
			res, err = explained(name)(next(callCtx, method, req))
			if ended.by != nil {
				return s.showInterrupt(ctx, link, call, ses, ended.by, ack), nil
			}
			if r, ok := res.(*mcp.CallToolResult); ok && err == nil {
				// Counted last: what arrived while the tool ran (a wait
				// that a notice ended) is in the line.
				withNotification(r, s.lineFor(ctx, ses, spec, r.IsError))
			}
			return res, err
		}
	}
}

// showInterrupt answers a call that intr stops with the interrupt notice
// (the tool did not run, or its wait took nothing). The model is shown the
// interrupt whole, with the unread notifications before it, so they are
// handed to the session as a batch only shown (fsstore.Store.ShowInterrupt),
// which the answer carries as any batch, with its ack: when it counts as
// read is links' (links.go). ack is what the call carried.
func (s *Server) showInterrupt(ctx context.Context, l *link, call *mcp.CallToolRequest, ses fsstore.Session, intr *fsstore.Notification, ack string) *mcp.CallToolResult {
	if err := s.links.begin(ctx, l, ses, callKind{tool: call.Params.Name, hands: true, ack: ack}); err != nil {
		s.log.Debug("the interrupting answer will not go out", "session", ses.ID, "err", err)
		return interruptNotice(call, ses, intr, nil, "") // nobody gets the answer
	}
	var earlier []fsstore.Notification
	handed, err := s.store.ShowInterrupt(ctx, ses, *intr, func(ns []fsstore.Notification) bool { earlier = ns; return true })
	if err != nil {
		s.log.Error("hand the interrupt shown", "agent", ses.Agent, "session", ses.ID, "err", err)
	}
	if !handed {
		// The session holds it already, shown (an answer proven read
		// showed it): the call that complies reads it, with or without an
		// ack; this answer carries nothing of its own.
		s.links.handedNothing(l, ses)
		return interruptNotice(call, ses, intr, earlier, "")
	}
	return interruptNotice(call, ses, intr, earlier, s.links.ackOf(l))
}

type ackKey struct{}

// withAck gives the tool the ack its answer carries (links.ackOf), for the
// answer to say.
func withAck(ctx context.Context, ack string) context.Context {
	return context.WithValue(ctx, ackKey{}, ack)
}

// ackFrom is the ack the answer of the call ctx belongs to carries ("" if
// the call has handed nothing): a tool whose answer hands the session
// something says to pass it on (links.go, rule 3).
func ackFrom(ctx context.Context) string {
	ack, _ := ctx.Value(ackKey{}).(string)
	return ack
}

// withAckArg is the call of tool that passes ack, as an instruction names
// it: tool(ack="..."), or tool alone without one.
func withAckArg(tool, ack string) string {
	if ack == "" {
		return tool
	}
	return tool + `(ack="` + ack + `")`
}

// waitEnd is where a waiting tool leaves the interrupt that ended its
// wait, for the gate to answer with (the wait took nothing: the tool did
// not run, as for an interrupt found before the call).
type waitEnd struct{ by *fsstore.Notification }

type waitEndKey struct{}

func withWaitEnd(ctx context.Context) (context.Context, *waitEnd) {
	w := &waitEnd{}
	return context.WithValue(ctx, waitEndKey{}, w), w
}

// endWait records that intr ended the wait of the call ctx belongs to.
func endWait(ctx context.Context, intr *fsstore.Notification) {
	if w, ok := ctx.Value(waitEndKey{}).(*waitEnd); ok {
		w.by = intr
	}
}

// callerSession resolves the session the call's session_token names and
// checks that it may call the tool (its level), and reads the ack the call
// carries (ackArgument); refused is the result of a call that may not run.
func (s *Server) callerSession(ctx context.Context, call *mcp.CallToolRequest, spec toolSpec) (ses fsstore.Session, ack string, refused *mcp.CallToolResult) {
	ses, refused = s.sessionOf(ctx, call, spec.level)
	if refused != nil {
		return ses, "", refused
	}
	ack, err := ackArgument(call, spec)
	if err != nil {
		return ses, "", refusal(call, err)
	}
	return ses, ack, nil
}

// ackArgument is the ack call carries, for a tool that takes one
// (toolSpec.takesAck; "" without one): an error when it is not the shape
// of one aipm gives. One of that shape that names nothing the session
// holds (an older one, another session's) proves nothing (links.go).
func ackArgument(call *mcp.CallToolRequest, spec toolSpec) (string, error) {
	if !spec.takesAck {
		return "", nil
	}
	v := gjson.GetBytes(call.Params.Arguments, "ack")
	if v.Type != gjson.String || v.Str == "" {
		return "", nil // absent; or not a string, which the schema check refuses
	}
	ack := strings.ToLower(v.Str)
	if !validAck(ack) {
		return "", toolErr("invalid_ack", fmt.Sprintf("%s refused: ack %q is not one aipm gives (%d hex digits): pass the ack of the answer you read as it was, or leave ack out", call.Params.Name, fsstore.Clip(v.Str, 64), 2*ackBytes))
	}
	return ack, nil
}

// sessionOf resolves the session the call's session_token names and
// checks that it may call a tool of level; refused is the result of a call
// that may not run.
func (s *Server) sessionOf(ctx context.Context, call *mcp.CallToolRequest, level Level) (ses fsstore.Session, refused *mcp.CallToolResult) {
	name := call.Params.Name
	token := gjson.GetBytes(call.Params.Arguments, "session_token")
	if token.Type != gjson.String || token.Str == "" {
		return ses, refusal(call, toolErr("session_required", fmt.Sprintf("%s needs session_token (level %s): call authenticate first and pass the token it returns", name, level)))
	}
	ses, err := s.store.CheckSession(ctx, token.Str)
	if errors.Is(err, fsstore.ErrExpiryNotSaved) {
		s.log.Warn("session expiry not saved; going on", "session", ses.ID, "err", err)
		err = nil
	}
	if err != nil {
		return ses, refusal(call, sessionError(name, err))
	}
	if s.foreign(ses) {
		return ses, refusal(call, toolErr("wrong_agent", fmt.Sprintf("%s refused: the session_token is %q's and this connection is authorized as %q by its bearer token: pass a session_token authenticate returned on this connection", name, ses.Agent, s.cred.Agent)))
	}
	if !level.allows(ses.Purpose) {
		return ses, refusal(call, toolErr("wrong_session_purpose", fmt.Sprintf("%s needs a %s session (level %s) and this is a %s session: %s", name, purposeOf(level), level, ses.Purpose, level.instead(name))))
	}
	return ses, nil
}

// foreign says whether ses is another agent's than the one this server is
// locked to (aipm serve --http: the bearer token's): its token is refused.
func (s *Server) foreign(ses fsstore.Session) bool {
	return s.locked && ses.Agent != s.cred.Agent
}

func purposeOf(l Level) string {
	if l == TaskOnly {
		return fsstore.PurposeTask
	}
	return fsstore.PurposeChat
}

// sessionError explains why a token was refused.
func sessionError(tool string, err error) error {
	switch {
	case errors.Is(err, fsstore.ErrSessionExpired):
		return toolErr("session_expired", fmt.Sprintf("%s refused: %v; call authenticate again", tool, err))
	case errors.Is(err, fsstore.ErrSessionEnded):
		return toolErr("session_ended", fmt.Sprintf("%s refused: %v; exit, or call authenticate again if you have more to do", tool, err))
	case errors.Is(err, fsstore.ErrBadToken):
		return toolErr("invalid_session", fmt.Sprintf("%s refused: %v", tool, err))
	}
	return toolErr("invalid_session", fmt.Sprintf("%s refused: %v", tool, err))
}

// explained finishes the result of a tool that ran: an error from the
// SDK's argument checks is rewritten to start with a code.
func explained(tool string) func(mcp.Result, error) (mcp.Result, error) {
	return func(res mcp.Result, err error) (mcp.Result, error) {
		if r, ok := res.(*mcp.CallToolResult); ok && err == nil {
			explainSchemaError(r, tool)
		}
		return res, err
	}
}

// noticeForNewSession adds the notification line to a successful result of
// a tool that needs no session (authenticate, help) when it has one: the
// session authenticate just opened, or the one help was given.
func (s *Server) noticeForNewSession(ctx context.Context, call *mcp.CallToolRequest, r *mcp.CallToolResult) {
	token := gjson.GetBytes(call.Params.Arguments, "session_token").String()
	if raw, ok := r.StructuredContent.(json.RawMessage); ok && token == "" {
		token = gjson.GetBytes(raw, "session_token").String()
	}
	if token == "" {
		return
	}
	ses, err := s.store.CheckSession(ctx, token)
	if (err != nil && !errors.Is(err, fsstore.ErrExpiryNotSaved)) || s.foreign(ses) {
		return
	}
	withNotification(r, s.lineFor(ctx, ses, toolSpec{toldOfMessages: true}, r.IsError)) // its instruction leads to get_next_action
}

// notificationLine is the line every authenticated response carries: how
// many unread notifications concern the session, announced once (DESIGN
// section 15); later lines say they were told. A negative count means the
// notifications could not be read. New messages a chat session was not told
// of follow, by sender (the new_message notice, DESIGN section 6); with
// them the line never says "none" (get_notifications lists them).
func notificationLine(u fsstore.Unread, msgs fsstore.NewMessages) string {
	if msgs.Count() == 0 {
		return notificationCount(u)
	}
	news := msgs.Text() + ": call get_pending_messages when you are ready"
	switch {
	case u.Count == 0:
		return "notifications: " + news
	case u.Count > 0 && u.New == 0:
		return fmt.Sprintf("notifications: %d unread, told before; %s", u.Count, news)
	}
	return notificationCount(u) + "; " + news
}

func notificationCount(u fsstore.Unread) string {
	switch {
	case u.Count < 0:
		return "notifications: unavailable (see the aipm serve log); call get_notifications"
	case u.Count == 0:
		return "notifications: none"
	case u.New == 0:
		return fmt.Sprintf("notifications: none new (%d unread, told before)", u.Count)
	case u.Count == 1:
		return "notifications: you have 1 notification: call get_notifications"
	}
	return fmt.Sprintf("notifications: you have %d notifications: call get_notifications", u.Count)
}
