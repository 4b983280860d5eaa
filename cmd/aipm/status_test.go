package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"aipm/fsstore"
)

// TestStatusWatch: status --watch draws once, draws again when a file of
// the project changes (a new task, a new message: fsnotify through
// wake.Hub, not the 30 s recheck), and ends cleanly when its context is
// cancelled.
func TestStatusWatch(t *testing.T) {
	dir := t.TempDir()
	store, cfg := newChatProject(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		getenv := func(string) string { return "" }
		done <- run(ctx, []string{"--dir", dir, "status", "--watch", "--json"}, getenv, strings.NewReader(""), &stdout, &stderr)
	}()
	waitPrinted(t, &stdout, `"todo":0`)

	// a new collection directory (tasks/) and a task in it
	if _, err := store.CreateTask(context.Background(), cfg, fsstore.NewTask{Title: "watch me", Requester: "alice"}); err != nil {
		t.Fatal(err)
	}
	waitPrinted(t, &stdout, `"todo":1`)
	sendToBob(t, store, cfg, "are you there?")
	waitPrinted(t, &stdout, `"id":"bob","type":"ai","sessions":[],"unreadMessages":1`)

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run returned %v after cancel; want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("status --watch did not return after its context was cancelled")
	}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if !strings.HasPrefix(line, `{"project":"follow",`) {
			t.Errorf("not one JSON report per line: %q", line)
		}
	}
	if stderr.String() != "" {
		t.Errorf("stderr: %s", stderr.String())
	}
}
