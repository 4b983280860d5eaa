package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// GetNotificationsIn is get_notifications' arguments.
type GetNotificationsIn struct {
	Session
	MarkAsRead *bool `json:"mark_as_read,omitempty"`
	Limit      int   `json:"limit,omitempty" jsonschema:"default 50, at most 500"`
	Acknowledgement
}

// GetNotificationsOut is get_notifications' result.
type GetNotificationsOut struct {
	Notifications []NotificationView `json:"notifications" jsonschema:"newest first"`
	HasMore       bool               `json:"has_more" jsonschema:"more unread notifications wait: call get_notifications again"`
	// Ack and Instruction, when notifications were handed: what the
	// session's next call passes to say it read them (links.go, rule 3).
	Ack         string `json:"ack,omitempty" jsonschema:"pass it as ack on your next call that takes one: it says you read these"`
	Instruction string `json:"instruction,omitempty"`
}

func getNotificationsTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "get_notifications",
			Description: "Your unread notifications, newest first.",
			Annotations: mutating,
		},
		level:           Authenticated,
		passesInterrupt: true,
		handsBatch:      true,
		takesAck:        true,
		marksRead:       true,
		readsStream:     fsstore.StreamNotifications, // ListNotifications acknowledges it, after listing a batch only shown
		page:            notificationPage,
		add:             addGetNotifications,
	}
}

func addGetNotifications(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in GetNotificationsIn) (*mcp.CallToolResult, GetNotificationsOut, error) {
		ses := sessionFrom(ctx)
		peek := in.MarkAsRead != nil && !*in.MarkAsRead
		limit, err := notificationPage.of(in.Limit)
		if err != nil {
			return nil, GetNotificationsOut{}, err
		}
		unread, more, err := s.store.ListNotifications(ctx, ses, peek, limit)
		if err != nil {
			return nil, GetNotificationsOut{}, fromStore(err, "notification_not_found")
		}
		views := notificationViews(fsstore.NewestFirst(unread), ses.Purpose)
		// The stored ones are the batch this call hands out (read from the
		// next call on): all of them stay; derived new_message items, which
		// only peek, fill the page, and the whole is newest first.
		msgs, moreMsgs := []NotificationView(nil), false
		if room := limit - len(views); room > 0 {
			if msgs, moreMsgs, err = s.newMessageNotices(ctx, ses, room); err != nil {
				return nil, GetNotificationsOut{}, err
			}
		} else if peeked, _, err := s.newMessageNotices(ctx, ses, 1); err != nil {
			return nil, GetNotificationsOut{}, err
		} else {
			moreMsgs = len(peeked) > 0 // the page is full: they wait
		}
		all := append(views, msgs...)
		slices.SortStableFunc(all, func(a, b NotificationView) int { return b.CreatedAt.Compare(a.CreatedAt) })
		out := GetNotificationsOut{Notifications: all, HasMore: more || moreMsgs}
		if !peek && len(unread) > 0 {
			out.Ack = ackFrom(ctx)
			out.Instruction = ackInstruction(out.Ack, ses.Purpose, more)
		}
		return nil, out, nil
	})
}

// ackInstruction is what get_notifications' answer says of its ack: the
// calls that pass it, which a session of purpose makes next (its loop's,
// and the one an interrupt asks for).
func ackInstruction(ack, purpose string, more bool) string {
	if ack == "" {
		return ""
	}
	ends := "logout"
	if purpose == fsstore.PurposeTask {
		ends = "report_completed"
	}
	if more {
		return fmt.Sprintf(`Pass ack=%q to get_notifications for the rest, or to your next get_next_action or %s.`, ack, ends)
	}
	return fmt.Sprintf(`Pass ack=%q to your next get_next_action or %s: it says you read these.`, ack, ends)
}

// newMessageNotices are seed 000's newMessage notifications for a chat
// session: one for each message the new_message notice announces (at most
// limit, newest first; fsstore's one rule, which the notification line
// applies too), with its message_id and sender_id. They are derived from
// the chat log, not written at each send (P2 pays nothing for them), and
// are read when the messages are: get_pending_messages or mark_read.
func (s *Server) newMessageNotices(ctx context.Context, ses fsstore.Session, limit int) ([]NotificationView, bool, error) {
	msgs, more, err := s.store.NewMessageNotices(ctx, ses, limit)
	if err != nil {
		return nil, false, fromStore(err, "message_not_found")
	}
	views := make([]NotificationView, 0, len(msgs))
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		at, _ := time.Parse(time.RFC3339Nano, m.CreatedAt)
		views = append(views, NotificationView{
			ID: m.ID, Type: notifyNewMessage, Action: "read", Message: "A new message from " + m.SenderID + ".",
			Instruction: "Read it with get_pending_messages.", From: m.SenderID, CreatedAt: at,
			MessageID: m.ID, SenderID: m.SenderID, Redelivered: m.Redelivered,
		})
	}
	return views, more, nil
}

// notifyNewMessage is the type of a newMessage notification (seed 000).
const notifyNewMessage = "new_message"
