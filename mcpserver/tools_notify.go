package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
	"aipm/fsstore/storage"
)

type GetNotificationsIn struct {
	Session
	MarkAsRead *bool `json:"mark_as_read,omitempty"`
	Limit      int   `json:"limit,omitempty" jsonschema:"default 50, at most 500"`
}

type GetNotificationsOut struct {
	Notifications []NotificationView `json:"notifications" jsonschema:"newest first"`
	HasMore       bool               `json:"has_more" jsonschema:"more unread notifications wait: call get_notifications again"`
}

func getNotificationsTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "get_notifications",
			Description: "Your unread notifications, newest first; read from your next call on unless mark_as_read is false.",
			Annotations: mutating,
		},
		level:           Authenticated,
		passesInterrupt: true,
		handsBatch:      true,
		marksRead:       true,
		readsStream:     storage.StreamNotifications, // ListNotifications acknowledges it, after listing a batch only shown
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
		return nil, GetNotificationsOut{Notifications: notificationViews(fsstore.NewestFirst(unread), ses.Purpose), HasMore: more}, nil
	})
}
