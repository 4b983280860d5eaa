package fsstore

import (
	"aipm/fsstore/internal/storage"
	"aipm/internal/lockedfile"
	"context"
	"time"
)

// UnreadCounts returns how many chat messages from others and how many
// notifications agent has not read yet. Nothing is marked read.
func (s *Store) UnreadCounts(ctx context.Context, agent string) (messages, notifications int, err error) {
	chat, err := s.files.ReadUnread(ctx, agent, storage.StreamChat, storage.ReadOptions{ReadOptions: lockedfile.ReadOptions{Match: fromOthers(agent)}, Peek: true})
	if err != nil {
		return 0, 0, err
	}
	notes, err := s.unreadNotifications(ctx, agent)
	if err != nil {
		return 0, 0, err
	}
	return len(chat.Records), notes, nil
}

// Unseen is what waits for an agent unseen: messages from others that no
// session of it was handed or told of.
type Unseen struct {
	Count  int      `json:"count"`
	Oldest *Message `json:"oldest,omitempty"`
}

// UnseenMessages returns agent's unread messages from others that were
// created before `before` and that no session was handed or told of (no
// surfaced receipt): what aipm status flags. Nothing is marked read.
func (s *Store) UnseenMessages(ctx context.Context, agent string, before time.Time) (Unseen, error) {
	res, err := s.files.ReadUnread(ctx, agent, storage.StreamChat, storage.ReadOptions{ReadOptions: lockedfile.ReadOptions{Match: fromOthers(agent)}, Peek: true})
	if err != nil || len(res.Records) == 0 {
		return Unseen{}, err
	}
	seen, err := s.files.Receipts(agent)
	if err != nil {
		return Unseen{}, err
	}
	var u Unseen
	for _, r := range res.Records {
		m, err := decodeMessage(r.Data)
		if err != nil || !seen[m.ID].SurfacedAt.IsZero() {
			continue
		}
		if at, err := time.Parse(time.RFC3339Nano, m.CreatedAt); err != nil || !at.Before(before) {
			continue
		}
		u.Count++
		if u.Oldest == nil {
			u.Oldest = &m
		}
	}
	return u, nil
}
