package storage

import (
	"aipm/internal/helperproc"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"aipm/internal/lockedfile"
)

// usedProject is a project where bob has n messages from alice and one
// notification, none read.
func usedProject(t *testing.T, n int) *Files {
	t.Helper()
	s := newTestFiles(t)
	ctx := context.Background()
	chat, _ := s.ChatPath("bob")
	for i := 0; i < n; i++ {
		if err := s.AppendJSONL(ctx, chat, testMessage("old")); err != nil {
			t.Fatal(err)
		}
	}
	notes, _ := s.NotificationsPath("bob")
	note := map[string]string{"id": NewID(PrefixNotification), "type": NotifyInfo, "message": "old news", "createdAt": time.Now().UTC().Format(time.RFC3339Nano)}
	if err := s.AppendJSONL(ctx, notes, note); err != nil {
		t.Fatal(err)
	}
	return s
}

// testMessage is a message from alice saying content, as the chat log
// holds it.
func testMessage(content string) map[string]string {
	return map[string]string{"id": NewID(PrefixMessage), "senderId": "alice", "content": content, "createdAt": time.Now().UTC().Format(time.RFC3339Nano)}
}

// cloneOf copies s's project the way git clone does: without the files
// .ai-pm/.gitignore keeps out (read cursors, passkeys, the local marker).
func cloneOf(t *testing.T, s *Files) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(s.ProjectDir(), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(s.ProjectDir(), path)
		switch name := d.Name(); {
		case d.IsDir():
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		case name == "read.json" || name == "passkey.json" || strings.HasPrefix(name, "local.") || strings.HasSuffix(name, ".lock"):
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// wantUnread opens the project dir and checks what bob has not read: the
// messages past his chat cursor, and the notifications past the cursors of
// both session purposes (a notification of no task is unread until some
// session read it).
func wantUnread(t *testing.T, dir string, messages, notifications int) {
	t.Helper()
	s, err := OpenFiles(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	peek := func(stream string) []string {
		t.Helper()
		res, err := s.ReadUnread(context.Background(), "bob", stream, ReadOptions{Peek: true})
		if err != nil {
			t.Fatal(err)
		}
		return RecordIDs(res.Records)
	}
	m := len(peek(StreamChat))
	byTask := peek(NotificationStream(PurposeTask))
	n := 0
	for _, id := range peek(NotificationStream(PurposeChat)) {
		if slices.Contains(byTask, id) {
			n++
		}
	}
	if m != messages || n != notifications {
		t.Errorf("bob has %d unread messages and %d notifications, want %d and %d", m, n, messages, notifications)
	}
}

// Processes opening a new clone at once: exactly one moves the cursors,
// and afterwards nothing that predates the clone is unread, while a new
// message is.
func TestCloneOpenedAtOnce(t *testing.T) {
	s := usedProject(t, 50)
	wantUnread(t, s.ProjectDir(), 50, 1)
	clone := cloneOf(t, s)
	// The lock is held until every helper is started, so that they all
	// find no marker and queue for it.
	unlock, err := lockedfile.Lock(context.Background(), filepath.Join(clone, DirName, "local.lock"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	var procs []*strings.Builder
	var waits []func() error
	for i := 0; i < 6; i++ {
		cmd := helperproc.Command(t, "open", clone, "bob", "0")
		out := &strings.Builder{}
		cmd.Stdout = out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, out)
		waits = append(waits, cmd.Wait)
	}
	time.Sleep(300 * time.Millisecond) // the helpers start and wait for the lock
	unlock()
	resets := 0
	for i, wait := range waits {
		if err := wait(); err != nil {
			t.Fatalf("helper %d: %v", i, err)
		}
		resets += strings.Count(procs[i].String(), "reset\n")
		if !strings.Contains(procs[i].String(), "opened") {
			t.Errorf("helper %d did not open the clone: %q", i, procs[i].String())
		}
	}
	if resets != 1 {
		t.Errorf("%d processes moved the clone's cursors, want 1", resets)
	}
	wantUnread(t, clone, 0, 0)
	c, _ := OpenFiles(clone, true)
	chat, _ := c.ChatPath("bob")
	if err := c.AppendJSONL(context.Background(), chat, testMessage("new")); err != nil {
		t.Fatal(err)
	}
	wantUnread(t, clone, 1, 0)
	wantUnread(t, s.ProjectDir(), 50, 1) // the original is not touched
}

// A process killed while it moved a clone's cursors leaves the marker
// "resetting": the next Open finishes the move.
func TestCloneResetFinishedAfterKill(t *testing.T) {
	s := usedProject(t, 5)
	clone := cloneOf(t, s)
	root := filepath.Join(clone, DirName)
	fi, err := os.Stat(root)
	if err != nil {
		t.Fatal(err)
	}
	c := newFiles(layoutOf(clone))
	if err := c.writeMarker(lockedfile.Inode(fi), markerResetting); err != nil {
		t.Fatal(err)
	}
	// as far as the killed process got: a cursor file (local state that
	// would otherwise say "not a clone") that moved nothing yet
	os.MkdirAll(filepath.Join(root, "agents", "bob"), 0o755)
	if err := os.WriteFile(filepath.Join(root, "agents", "bob", "read.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantUnread(t, clone, 0, 0)
	if _, ok := c.markerFits(lockedfile.Inode(fi)); !ok {
		t.Error("the marker is not ready after the move was finished")
	}
}

// A checkout made before aipm wrote markers keeps its read state: it has
// read cursors (or passkeys) of its own, so it is no clone.
func TestCheckoutWithoutMarkerKeepsReadState(t *testing.T) {
	s := usedProject(t, 3)
	if _, err := s.ReadUnread(context.Background(), "bob", StreamChat, ReadOptions{ReadOptions: lockedfile.ReadOptions{Limit: 1}}); err != nil {
		t.Fatal(err)
	}
	os.Remove(s.localMarkerPath())
	wantUnread(t, s.ProjectDir(), 2, 1)
	if _, err := os.Stat(s.localMarkerPath()); err != nil {
		t.Errorf("no marker written: %v", err)
	}
}

// TestCloneCost measures the move on a long chat log (AIPM_LONG=1: one
// million lines).
func TestCloneCost(t *testing.T) {
	n := 20000
	if os.Getenv("AIPM_LONG") != "" {
		n = 1000000
	}
	s := newTestFiles(t)
	chat, _ := s.ChatPath("bob")
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(`{"id":"` + NewID(PrefixMessage) + `","senderId":"alice","content":"a message of some ordinary length, as people write them","createdAt":"2026-11-25T12:00:00Z"}` + "\n")
	}
	os.MkdirAll(filepath.Dir(chat), 0o755)
	if err := os.WriteFile(chat, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	clone := cloneOf(t, s)
	start := time.Now()
	if _, err := OpenFiles(clone, true); err != nil {
		t.Fatal(err)
	}
	t.Logf("a clone with a %d-line chat log (%d bytes) opened in %s", n, b.Len(), time.Since(start))
	wantUnread(t, clone, 0, 0)
}
