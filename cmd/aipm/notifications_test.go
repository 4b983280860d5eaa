package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"aipm/fsstore"
)

// TestNotificationsFollow: aipm notifications --follow prints each new
// notification once, also after an editor replaced the file by rename,
// marks nothing read, and ends cleanly when its context is cancelled;
// with --json each one is a line of JSON.
func TestNotificationsFollow(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want func(text string) string // what shows that text was printed
	}{
		{"text", []string{"notifications", "--follow"}, func(text string) string { return "bob  info       unread  from alice: " + text }},
		{"json", []string{"notifications", "bob", "--follow", "--json"}, func(text string) string { return `"message":"` + text + `"` }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			store, _ := newChatProject(t, dir)
			cmd := runInBackground(t, append([]string{"--dir", dir}, tc.args...)...)
			stdout := &cmd.stdout

			notifyBob(t, store, "first notice")
			waitPrinted(t, stdout, tc.want("first notice"))
			replaceByRename(t, filepath.Join(dir, fsstore.DirName, "agents", "bob", "notifications.jsonl"))
			notifyBob(t, store, "second notice")
			waitPrinted(t, stdout, tc.want("second notice"))
			notifyBob(t, store, "third notice") // anything printed twice comes before it
			waitPrinted(t, stdout, tc.want("third notice"))

			for _, text := range []string{"first notice", "second notice", "third notice"} {
				if n := strings.Count(stdout.String(), text); n != 1 {
					t.Errorf("%q printed %d times; want once. stdout:\n%s", text, n, stdout.String())
				}
			}
			if tc.name == "json" {
				for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
					if !json.Valid([]byte(line)) {
						t.Errorf("not a JSON line: %s", line)
					}
				}
			}
			cmd.stop(t)
			// A look is a peek: the three are still unread.
			if ids, err := store.UnreadNotificationIDs(context.Background(), "bob"); err != nil || len(ids) != 3 {
				t.Errorf("after --follow bob has %d unread notifications (%v); want 3", len(ids), err)
			}
		})
	}
}

func notifyBob(t *testing.T, store *fsstore.Store, text string) {
	t.Helper()
	if _, err := store.Notify(context.Background(), "bob", fsstore.Notification{From: "alice", Message: text}); err != nil {
		t.Fatal(err)
	}
}
