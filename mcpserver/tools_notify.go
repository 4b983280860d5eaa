package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

type GetNotificationsIn struct {
	Session
	MarkAsRead *bool `json:"mark_as_read,omitempty" jsonschema:"mark the returned notifications read (default true)"`
}

type GetNotificationsOut struct {
	Notifications []NotificationView `json:"notifications" jsonschema:"unread notifications, newest first; redelivered: true on one that may have reached an earlier session that ended before acknowledging it"`
}

func addGetNotifications(srv *mcp.Server, s *Server) {
	addTool(srv, &mcp.Tool{
		Name:        "get_notifications",
		Description: "Your unread notifications, newest first; they count as read from your next call on, unless mark_as_read is false. An interrupt means: stop, then report_completed(result=\"blocked\").",
		Annotations: mutating,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in GetNotificationsIn) (*mcp.CallToolResult, GetNotificationsOut, error) {
		ses := sessionFrom(ctx)
		peek := in.MarkAsRead != nil && !*in.MarkAsRead
		unread, err := s.store.SessionNotifications(ctx, ses, peek)
		if err != nil {
			return nil, GetNotificationsOut{}, fromStore(err, "notification_not_found")
		}
		return nil, GetNotificationsOut{Notifications: notificationViews(fsstore.NewestFirst(unread))}, nil
	})
}
