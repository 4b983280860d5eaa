package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"aipm/fsstore"
)

// gate wraps every tools/call (DESIGN sections 5 and 6): unknown tools are
// refused, the session is resolved and its level checked, an unread
// interrupt replaces the response of every tool but the few that let the
// agent comply, and every authenticated response ends with the
// notification line.
func (s *Server) gate(registered map[string]bool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			call, ok := req.(*mcp.CallToolRequest)
			if !ok {
				return next(ctx, method, req)
			}
			name := call.Params.Name
			level, known := levels[name]
			switch {
			case !known:
				return refusal(toolErr("unknown_tool", fmt.Sprintf("there is no tool %q: call help for the tools you can use", name))), nil
			case !registered[name]:
				return refusal(toolErr("not_available", fmt.Sprintf("%s is not available in this version of aipm: call help for the tools you can use", name))), nil
			case level == None:
				return next(ctx, method, req)
			}
			token := gjson.GetBytes(call.Params.Arguments, "session_token")
			if token.Type != gjson.String || token.Str == "" {
				return refusal(toolErr("session_required", fmt.Sprintf("%s needs session_token (level %s): call authenticate first and pass the token it returns", name, level))), nil
			}
			ses, err := s.store.CheckSession(ctx, token.Str)
			if err != nil {
				return refusal(sessionError(name, err)), nil
			}
			if !level.allows(ses.Purpose) {
				return refusal(toolErr("wrong_session_purpose", fmt.Sprintf("%s needs a %s session (level %s) and this is a %s session: %s", name, purposeOf(level), level, ses.Purpose, level.instead(name)))), nil
			}
			unread, stop := s.deliver(ctx, ses, name)
			if stop != nil {
				return stop, nil
			}
			res, err := next(withSession(ctx, ses), method, req)
			if r, ok := res.(*mcp.CallToolResult); ok && err == nil {
				if name == "get_notifications" { // the one tool that marks them read
					unread = s.unreadCount(ctx, ses)
				}
				r.Content = append(r.Content, &mcp.TextContent{Text: notificationLine(unread)})
			}
			return res, err
		}
	}
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

// refusal is a tool error result for a call that did not run.
func refusal(err error) *mcp.CallToolResult {
	var res mcp.CallToolResult
	res.SetError(err)
	return &res
}

// interruptNotice replaces the response of a tool that did not run.
func interruptNotice(tool string, n *fsstore.Notification) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(
			"INTERRUPT (%s did not run): %s Call get_notifications to read it, then report_completed(result=\"blocked\", summary=...) and exit.",
			tool, n.Message)}},
	}
}

// notificationLine is the line every authenticated response carries; a
// negative count means the notifications could not be read.
func notificationLine(unread int) string {
	switch {
	case unread < 0:
		return "notifications: unavailable (see the aipm serve log); call get_notifications"
	case unread == 0:
		return "notifications: none"
	case unread == 1:
		return "notifications: you have 1 notification: call get_notifications"
	}
	return fmt.Sprintf("notifications: you have %d notifications: call get_notifications", unread)
}
