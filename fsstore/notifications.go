package fsstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Notification types.
const (
	NotifyInterrupt = "interrupt"
	NotifyInfo      = "info"
)

// Notification is one line of agents/<agent>/notifications.jsonl.
type Notification struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Message   string    `json:"message"`
	TaskID    string    `json:"taskId,omitempty"`
	From      string    `json:"from,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// Interrupt returns the first unread interrupt that stops ses (DESIGN
// section 6), and the number of unread notifications. An interrupt about a
// task stops only a task session working on that task, and only while the
// task is still blocked or cancelled (a task resumed since makes it moot);
// one about no task stops any session of the agent.
func (s *Store) Interrupt(ctx context.Context, ses Session) (*Notification, int, error) {
	unread, err := s.UnreadNotifications(ctx, ses.Agent, true)
	if err != nil {
		return nil, 0, err
	}
	for i, n := range unread {
		if n.Type != NotifyInterrupt {
			continue
		}
		if n.TaskID == "" {
			return &unread[i], len(unread), nil
		}
		if ses.Purpose != PurposeTask || ses.TaskID != n.TaskID {
			continue
		}
		if t, err := s.Task(n.TaskID); err == nil && (t.Status == StatusBlocked || t.Status == StatusCancelled) {
			return &unread[i], len(unread), nil
		}
	}
	return nil, len(unread), nil
}

// Notify appends a notification for agent and returns it.
func (s *Store) Notify(ctx context.Context, agent string, n Notification) (Notification, error) {
	path, err := s.NotificationsPath(agent)
	if err != nil {
		return n, err
	}
	if n.Type == "" {
		n.Type = NotifyInfo
	}
	n.ID, n.CreatedAt = NewID(PrefixNotification), time.Now().UTC()
	return n, s.AppendJSONL(ctx, path, n)
}

// UnreadNotifications returns the agent's unread notifications, oldest
// first, and advances the read cursor past them unless peek.
func (s *Store) UnreadNotifications(ctx context.Context, agent string, peek bool) ([]Notification, error) {
	res, err := s.ReadUnread(ctx, agent, StreamNotifications, ReadOptions{Peek: peek})
	if err != nil {
		return nil, err
	}
	out := make([]Notification, 0, len(res.Records))
	for _, r := range res.Records {
		var n Notification
		if err := json.Unmarshal(r.Data, &n); err != nil {
			return nil, fmt.Errorf("notification at line %d: %w", r.Line, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// NewestFirst reverses a list of notifications read oldest first.
func NewestFirst(ns []Notification) []Notification {
	out := slices.Clone(ns)
	slices.Reverse(out)
	return out
}
