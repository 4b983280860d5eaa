package storage

import (
	"path/filepath"
	"testing"
)

// Every lock the layout has gets its rank from the one table, and every
// rank of the table is named once, in order.
func TestLockOrderTable(t *testing.T) {
	for r := rankNone + 1; r < rankCount; r++ {
		if lockOrder[r] == "" {
			t.Errorf("rank %d has no name in lockOrder", r)
		}
	}
	l := layout{project: "/p", root: "/p/.ai-pm"}
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
