package fsstore

import (
	"context"
)

// UnreadCounts returns how many chat messages from others and how many
// notifications agent has not read yet. Nothing is marked read.
func (s *Store) UnreadCounts(ctx context.Context, agent string) (messages, notifications int, err error) {
	chat, err := s.ReadUnread(ctx, agent, StreamChat, ReadOptions{Peek: true, Match: FromOthers(agent)})
	if err != nil {
		return 0, 0, err
	}
	notes, err := s.unreadNotifications(ctx, agent)
	if err != nil {
		return 0, 0, err
	}
	return len(chat.Records), notes, nil
}
