package fsstore

import (
	"context"
	"sort"
)

// Pending lists pending/<agent>.<purpose>.json, oldest first.
// Unreadable documents are skipped (doctor reports them).
func (tq TriggerQueue) Pending() ([]Trigger, error) {
	s := tq.s
	var out []Trigger
	err := eachDoc(s, Pending, func(_ string, t Trigger) error { out = append(out, t); return nil })
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, err
}

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

// TriggerQueue is pending/: the pending-purpose triggers, "start <agent>
// for <purpose>", that authenticate takes and the watcher acts on.
type TriggerQueue struct{ s *Store }

// Triggers is the project's queue of pending-purpose triggers.
func (s *Store) Triggers() TriggerQueue { return TriggerQueue{s: s} }
