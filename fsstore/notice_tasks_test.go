package fsstore

import (
	"aipm/fsstore/internal/storage"
	"aipm/internal/lockedfile"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// taskNotes writes, for coder, the notifications named (a prefix "A:" or
// "B:" addresses one to that task, "int" makes it an interrupt) and
// returns their ids by name.
func taskNotes(t *testing.T, s *Store, tasks map[string]string, names ...string) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for _, name := range names {
		n := Notification{Type: storage.NotifyInfo, Message: name}
		if task, _, ok := strings.Cut(name, ":"); ok {
			n.TaskID = tasks[task]
		}
		if strings.Contains(name, "int") {
			n.Type = storage.NotifyInterrupt
		}
		w, err := s.Notify(context.Background(), "coder", n)
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = w.ID
	}
	return ids
}

func noticeMessages(ns []Notification) string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Message)
	}
	return strings.Join(out, " ")
}

// readAndAck is a session's get_notifications (limit: 0 for all) and the
// later call that proves it received them.
func readAndAck(t *testing.T, s *Store, ses Session, limit int) (string, bool) {
	t.Helper()
	ns, more, err := s.SessionNotifications(context.Background(), ses, false, limit)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.files.Acknowledge(context.Background(), ses.Agent, ses.ID); err != nil {
		t.Fatal(err)
	}
	return noticeMessages(ns), more
}

// One task session's reads never consume what is addressed to another
// task (DESIGN section 6): what waits for task A stays unread, and
// counted, through the reads of a session on B, and A's session, a later
// one, gets exactly it, in file order, by pages; what is addressed to no
// task is any task session's.
func TestTaskNotificationsKeptForTheirTask(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	tasks := map[string]string{"A": storage.NewID(storage.PrefixTask), "B": storage.NewID(storage.PrefixTask)}
	onB := Session{ID: storage.NewID(storage.PrefixSession), Agent: "coder", Purpose: storage.PurposeTask, TaskID: tasks["B"], CreatedAt: time.Now().UTC()}
	taskNotes(t, s, tasks, "A:int", "A:note1", "all1", "B:note", "A:note2", "all2")

	if got, _ := readAndAck(t, s, onB, 0); got != "all1 B:note all2" {
		t.Fatalf("the session on B got %q", got)
	}
	if got, _ := readAndAck(t, s, onB, 0); got != "" {
		t.Fatalf("the session on B, again: %q", got)
	}
	unread, err := s.UnreadNotificationIDs(ctx, "coder")
	if err != nil || len(unread) != 3 {
		t.Fatalf("unread after B's session: %d (%v), want A's three", len(unread), err)
	}

	onA := Session{ID: storage.NewID(storage.PrefixSession), Agent: "coder", Purpose: storage.PurposeTask, TaskID: tasks["A"], CreatedAt: time.Now().UTC()}
	u, err := s.Interrupt(ctx, onA)
	if err != nil || u.Interrupt == nil || u.Interrupt.Message != "A:int" || u.Count != 3 {
		t.Fatalf("A's session: interrupt %v, %d unread (%v)", u.Interrupt, u.Count, err)
	}
	taskNotes(t, s, tasks, "all3")
	for _, want := range []string{"A:int A:note1", "A:note2 all3"} {
		got, more := readAndAck(t, s, onA, 2)
		if got != want || !more && want == "A:int A:note1" {
			t.Fatalf("A's session, a page of 2: %q (more %v), want %q", got, more, want)
		}
	}
	if got, more := readAndAck(t, s, onA, 2); got != "" || more {
		t.Fatalf("A's session, at the end: %q (more %v)", got, more)
	}
	if unread, err := s.UnreadNotificationIDs(ctx, "coder"); err != nil || len(unread) != 0 {
		t.Fatalf("unread at the end: %v (%v)", unread, err)
	}
}

// A batch of a per-task stream is taken back with its purpose's stream
// (Unhand names streams, and a stream names its sub-streams): the next
// read gets it again, marked.
func TestTaskNotificationBatchTakenBack(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	tasks := map[string]string{"A": storage.NewID(storage.PrefixTask)}
	onA := Session{ID: storage.NewID(storage.PrefixSession), Agent: "coder", Purpose: storage.PurposeTask, TaskID: tasks["A"], CreatedAt: time.Now().UTC()}
	taskNotes(t, s, tasks, "A:int", "all")
	if ns, _, err := s.SessionNotifications(ctx, onA, false, 0); err != nil || noticeMessages(ns) != "A:int all" {
		t.Fatalf("handed %q (%v)", noticeMessages(ns), err)
	}
	if took, err := s.Unhand(ctx, "coder", onA.ID, storage.NotificationStream(storage.PurposeTask)); err != nil || !took {
		t.Fatalf("took back: %v (%v)", took, err)
	}
	ns, _, err := s.SessionNotifications(ctx, onA, false, 0)
	if err != nil || noticeMessages(ns) != "A:int all" || !ns[0].Redelivered || !ns[1].Redelivered {
		t.Fatalf("after the take-back: %+v (%v)", ns, err)
	}
}

// A read.json written before per-task cursors (one shared notifications
// cursor, or one per purpose) keeps working: a task's cursor starts where
// the purpose's, or the shared one, is.
func TestTaskNotificationsOldCursors(t *testing.T) {
	for _, stream := range []string{storage.StreamNotifications, storage.NotificationStream(storage.PurposeTask)} {
		t.Run(stream, func(t *testing.T) {
			s := newTestStore(t)
			tasks := map[string]string{"A": storage.NewID(storage.PrefixTask)}
			taskNotes(t, s, tasks, "A:read before", "A:new", "all")
			path, _ := s.files.NotificationsPath("coder")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			fi, _ := os.Stat(path)
			first := bytes.IndexByte(data, '\n') + 1
			var n Notification
			json.Unmarshal(data[:first], &n)
			cursors := fmt.Sprintf(`{%q: {"offset": %d, "line": 1, "inode": %d, "lastId": %q}}`, stream, first, lockedfile.Inode(fi), n.ID)
			cursorPath, _ := s.files.ReadCursorPath("coder")
			if err := os.WriteFile(cursorPath, []byte(cursors), 0o644); err != nil {
				t.Fatal(err)
			}
			onA := Session{ID: storage.NewID(storage.PrefixSession), Agent: "coder", Purpose: storage.PurposeTask, TaskID: tasks["A"], CreatedAt: time.Now().UTC()}
			if got, _ := readAndAck(t, s, onA, 0); got != "A:new all" {
				t.Fatalf("A's session on an old read.json got %q", got)
			}
			problems, err := s.Doctor(context.Background(), false)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				if strings.Contains(p.Path, "read.json") {
					t.Errorf("doctor: %s: %s", p.Path, p.Reason)
				}
			}
		})
	}
}

// Compaction keeps what a per-task cursor's task has not read, and nothing
// more for it: the cursor of a task whose session read everything (and
// will never read again) pins no line, and is forgotten (read.json does
// not grow with every task that ever had a notification); one whose
// task's notification waits is moved to the new file. Each session then
// gets what is its own, once.
func TestCompactTaskCursor(t *testing.T) {
	s, cfg := leadAndCoder(t)
	ctx := context.Background()
	cfg.Retain.NotificationLines = 2
	tasks := map[string]string{"A": storage.NewID(storage.PrefixTask), "B": storage.NewID(storage.PrefixTask), "C": storage.NewID(storage.PrefixTask)}
	session := func(task string) Session {
		return Session{ID: storage.NewID(storage.PrefixSession), Agent: "coder", Purpose: storage.PurposeTask, TaskID: tasks[task], CreatedAt: time.Now().UTC()}
	}
	chat := Session{ID: storage.NewID(storage.PrefixSession), Agent: "coder", Purpose: storage.PurposeChat, CreatedAt: time.Now().UTC()}
	ids := taskNotes(t, s, tasks, "A:done")
	if got, _ := readAndAck(t, s, session("A"), 0); got != "A:done" {
		t.Fatalf("A's session got %q", got)
	}
	for k, v := range taskNotes(t, s, tasks, "all1", "all2", "all3", "all4", "C:waits", "all5", "all6") {
		ids[k] = v
	}
	if got, _ := readAndAck(t, s, session("B"), 0); got != "all1 all2 all3 all4 all5 all6" {
		t.Fatalf("B's session got %q", got)
	}
	if got, _ := readAndAck(t, s, chat, 0); got != "all1 all2 all3 all4 all5 all6" {
		t.Fatalf("the chat session got %q", got)
	}
	if _, err := s.Compact(ctx, cfg, CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	path, _ := s.files.NotificationsPath("coder")
	if kept := logIDs(t, path); strings.Join(kept, " ") != strings.Join([]string{ids["C:waits"], ids["all5"], ids["all6"]}, " ") {
		t.Fatalf("kept %d lines, want C's unread one and the newest two", len(kept))
	}
	cursorPath, _ := s.files.ReadCursorPath("coder")
	cursors, err := s.files.ReadCursors(cursorPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cursors[storage.TaskNotificationStream(tasks["A"])]; ok {
		t.Error("A's cursor, with nothing of A's left to read, is kept")
	}
	if _, ok := cursors[storage.TaskNotificationStream(tasks["C"])]; !ok {
		t.Error("C's cursor, with C's notification unread, is gone")
	}
	taskNotes(t, s, tasks, "A:later")
	if got, _ := readAndAck(t, s, session("A"), 0); got != "A:later" {
		t.Fatalf("A's next session after compaction got %q", got)
	}
	if got, _ := readAndAck(t, s, session("C"), 0); got != "C:waits" {
		t.Fatalf("C's session after compaction got %q", got)
	}
}
