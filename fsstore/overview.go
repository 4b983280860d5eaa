package fsstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// PendingTriggers lists pending/<agent>.<purpose>.json, oldest first.
// Unreadable documents are skipped (doctor reports them).
func (s *Store) PendingTriggers() ([]Trigger, error) {
	dir := s.CollectionDir(Pending)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list triggers: %w", err)
	}
	var out []Trigger
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		var t Trigger
		if err := s.readDoc(filepath.Join(dir, e.Name()), &t); err != nil {
			continue
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
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
