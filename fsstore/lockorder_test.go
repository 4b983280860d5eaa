package fsstore

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"aipm/fsstore/lockedfile"
	"aipm/internal/testenv"
)

// Every lock the layout has gets its rank from the one table, and every
// rank of the table is named once, in order.
func TestLockOrderTable(t *testing.T) {
	for r := rankNone + 1; r < rankCount; r++ {
		if lockOrder[r] == "" {
			t.Errorf("rank %d has no name in lockOrder", r)
		}
	}
	l := Layout{project: "/p", root: "/p/.ai-pm"}
	for _, tc := range []struct {
		rel  string
		want int
	}{
		{".", rankWatcher},
		{"watcher.lock", rankWatcher},
		{"runs/.coder.task.lock", rankRunSlot},
		{"sessions/.ses_01M8FZF6S0BF76H3482PSHV9RG.wake", rankWake},
		{"local.lock", rankLocal},
		{"compact.lock", rankCompact},
		{"bearer.lock", rankBearer},
		{".lock", rankProject},
		{"agents/coder/.lock", rankAgent},
		{"conversations/.lock", rankCollection},
		{"tasks/.lock", rankCollection},
		{"delegations/.lock", rankCollection},
		{"sessions/.lock", rankCollection},
		{"pending/.lock", rankCollection},
		{"runs/.lock", rankCollection},
		{"agents/coder/chat.jsonl", rankLog},
		{"agents/coder/notifications.jsonl", rankLog},
		{"agents/coder/receipts.jsonl", rankLog},
		{"probe.jsonl", rankLog},
		{"sessions/.ses_01M8FZF6S0BF76H3482PSHV9RG.told", rankTold},
		{"config.toml", rankDocument},
		{"tasks/tsk_01M8FZF6S0BF76H3482PSHV9RG.json", rankDocument},
		{"agents/coder/read.json", rankDocument},
		{"agents/coder/markers.json", rankDocument},
		{"agents/coder/compacted.json", rankDocument},
		{"pending/coder.task.json", rankDocument},
		{"tasks/.tsk_01M8FZF6S0BF76H3482PSHV9RG.json.tmp-1", rankNone}, // no lock is taken there
		{"elsewhere/.lock", rankNone},
	} {
		got := l.lockRank(filepath.Join(l.root, filepath.FromSlash(tc.rel)))
		if got.Order != tc.want {
			t.Errorf("%s: rank %d (%s), want %d (%s)", tc.rel, got.Order, got.Name, tc.want, lockOrder[tc.want])
		}
	}
	if got := l.lockRank("/elsewhere/x.lock"); got.Order != rankNone {
		t.Errorf("a lock outside .ai-pm: rank %v", got)
	}
}

// With the checker built in, a store's locks taken out of the table's
// order are reported, naming both, and the lawful order is not.
func TestLockOrderChecked(t *testing.T) {
	testenv.SkipWithoutLockRank(t)
	ctx := context.Background()
	s, _ := leadAndCoder(t)
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
				unlock, err := s.lockDir(ctx, dir)
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
