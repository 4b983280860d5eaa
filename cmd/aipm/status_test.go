package main

import (
	"context"
	"strings"
	"testing"

	"aipm/fsstore"
)

// TestStatusWatch: status --watch draws once, draws again when a file of
// the project changes (a new task, a new message: fsnotify through
// wake.Hub, not the 30 s recheck), and ends cleanly when its context is
// cancelled.
func TestStatusWatch(t *testing.T) {
	dir := t.TempDir()
	store, cfg := newChatProject(t, dir)
	cmd := runInBackground(t, "--dir", dir, "status", "--watch", "--json")
	stdout := &cmd.stdout
	waitPrinted(t, stdout, `"todo":0`)

	// a new collection directory (tasks/) and a task in it
	if _, err := store.CreateTask(context.Background(), cfg, fsstore.NewTask{Title: "watch me", Requester: "alice"}); err != nil {
		t.Fatal(err)
	}
	waitPrinted(t, stdout, `"todo":1`)
	sendToBob(t, store, cfg, "are you there?")
	waitPrinted(t, stdout, `"id":"bob","type":"ai","sessions":[],"unreadMessages":1`)

	cmd.stop(t)
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if !strings.HasPrefix(line, `{"project":"follow",`) {
			t.Errorf("not one JSON report per line: %q", line)
		}
	}
}
