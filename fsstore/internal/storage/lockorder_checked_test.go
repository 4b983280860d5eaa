package storage

import (
	"aipm/internal/lockedfile"
	"aipm/internal/testenv"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// With the checker built in, a store's locks taken out of the table's
// order are reported, naming both, and the lawful order is not.
func TestLockOrderChecked(t *testing.T) {
	testenv.SkipWithoutLockRank(t)
	ctx := context.Background()
	s := newTestFiles(t)
	if err := s.EnsureAgentDir("coder"); err != nil {
		t.Fatal(err)
	}
	agentDir, _ := s.AgentDir("coder")
	chat, _ := s.ChatPath("coder")
	for _, tc := range []struct {
		name         string
		dirs         []string // collection locks taken in this order
		appendChat   bool     // then an append to coder's chat log
		taking, held string   // the report: the lock waited for, the lock held ("" for none)
	}{
		{"agent, tasks, a log", []string{agentDir, s.CollectionDir(Tasks)}, true, "", ""},
		{"conversations, a log", []string{s.CollectionDir(Conversations)}, true, "", ""},
		{"tasks, then an agent", []string{s.CollectionDir(Tasks), agentDir}, false, "agents/coder/.lock", "tasks/.lock"},
		{"sessions, then tasks", []string{s.CollectionDir(Sessions), s.CollectionDir(Tasks)}, false, "tasks/.lock", "sessions/.lock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []*lockedfile.LockOrderError
			defer lockedfile.OnLockOrderViolation(func(e *lockedfile.LockOrderError) { got = append(got, e) })()
			for _, dir := range tc.dirs {
				unlock, err := s.LockDir(ctx, dir)
				if err != nil {
					t.Fatal(err)
				}
				defer unlock()
			}
			if tc.appendChat {
				if err := s.AppendJSONL(ctx, chat, map[string]string{"id": "msg_x"}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.taking == "" {
				if len(got) > 0 {
					t.Fatalf("lawful order reported:\n%v", got[0])
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("%d reports, want 1: %v", len(got), got)
			}
			rel := func(p string) string { r, _ := filepath.Rel(s.Root(), p); return filepath.ToSlash(r) }
			if rel(got[0].Taking.Path) != tc.taking || rel(got[0].Held.Path) != tc.held {
				t.Errorf("report: %s while %s is held, want %s while %s", rel(got[0].Taking.Path), rel(got[0].Held.Path), tc.taking, tc.held)
			}
			if msg := got[0].Error(); !strings.Contains(msg, got[0].Taking.Rank.Name) || !strings.Contains(msg, got[0].Held.Rank.Name) {
				t.Errorf("report does not name both locks' ranks:\n%s", msg)
			}
		})
	}
}
