package storage

import (
	"path/filepath"
	"testing"
)

func TestQuietChange(t *testing.T) {
	l := layout{project: filepath.FromSlash("/p"), root: filepath.FromSlash("/p/.ai-pm")}
	chat, _ := l.ChatPath("coder")
	cursor, _ := l.ReadCursorPath("coder")
	log, _ := l.LogDir("coder")
	task := filepath.Join(l.CollectionDir(Tasks), "tsk_1.json")
	cases := []struct {
		path  string
		quiet bool
	}{
		{l.ConfigPath(), false},
		{chat, false},
		{task, false},
		{l.CollectionDir(Pending), false},
		{cursor, true},
		{l.logsDir(), true},
		{log, true},
		{filepath.Join(log, "run.log"), true},
		{l.watcherLockPath(), true},
		{l.watcherInfoPath(), true},
		{filepath.Join(l.CollectionDir(Tasks), ".lock"), true},
		{filepath.Join(l.CollectionDir(Tasks), ".tsk_1.json.tmp-123"), true},
		{filepath.Join(l.root, "logsbook"), false},
		{filepath.Join(l.CollectionDir(Tasks), "read.json"), false}, // a cursor only in an agent's directory
	}
	for _, c := range cases {
		if got := l.QuietChange(c.path); got != c.quiet {
			t.Errorf("QuietChange(%s) = %v, want %v", l.Rel(c.path), got, c.quiet)
		}
	}
	if !l.UnwatchedDir(l.logsDir()) || l.UnwatchedDir(log) || l.UnwatchedDir(l.root) || l.UnwatchedDir(l.CollectionDir(Tasks)) {
		t.Error("UnwatchedDir: only logs/ itself is left unwatched (a walk skips what is below it)")
	}
}
