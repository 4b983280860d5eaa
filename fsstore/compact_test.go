package fsstore

import (
	"aipm/fsstore/internal/storage"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sendN sends n messages from lead to coder and returns their ids.
func sendN(t *testing.T, s *Store, cfg *storage.Config, n int) []string {
	t.Helper()
	var ids []string
	for i := 0; i < n; i++ {
		m, err := s.Send(context.Background(), cfg, OutgoingMessage{From: "lead", To: "coder", Content: fmt.Sprintf("message %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	return ids
}

// logIDs are the ids of the lines of a log, in file order.
func logIDs(t *testing.T, path string) []string {
	t.Helper()
	recs, _, _, err := storage.ReadAll(path)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range recs {
		ids = append(ids, idOf(r))
	}
	return ids
}

func deliveredIDs(msgs []Message) (ids []string, redelivered int) {
	for _, m := range msgs {
		ids = append(ids, m.ID)
		if m.Redelivered {
			redelivered++
		}
	}
	return ids, redelivered
}

// Compaction keeps the newest lines and everything past the cursor (and
// the line the cursor last consumed); a log nobody read keeps every
// message it received (its own sent copies go by the retention); the
// reader then gets exactly what it had not read.
func TestCompactKeepsWhatReadersNeed(t *testing.T) {
	s, cfg := leadAndCoder(t)
	ctx := context.Background()
	cfg.Retain.ChatLines = 5
	ids := sendN(t, s, cfg, 30)
	coder := Session{ID: "ses_a", Agent: "coder", Purpose: storage.PurposeChat}
	if _, _, err := s.Deliver(ctx, coder, 20); err != nil {
		t.Fatal(err)
	}
	if err := s.files.Acknowledge(ctx, "coder", coder.ID); err != nil {
		t.Fatal(err)
	}
	res, err := s.Compact(ctx, cfg, CompactOptions{})
	if err != nil {
		t.Fatal(err)
	}
	coderChat, _ := s.files.ChatPath("coder")
	leadChat, _ := s.files.ChatPath("lead")
	if got := logIDs(t, coderChat); strings.Join(got, " ") != strings.Join(ids[19:], " ") {
		t.Fatalf("coder's chat kept %d lines %v, want the last one read and the 10 unread (%v)", len(got), got, ids[19:])
	}
	if got := logIDs(t, leadChat); len(got) != 5 {
		t.Fatalf("lead's chat (its sent copies only: nothing for a reader) kept %d lines, want the newest 5", len(got))
	}
	if f := fileOf(res, "coder/chat.jsonl"); f.DroppedLines != 19 || !f.Unread {
		t.Fatalf("result %+v: want coder's chat, 19 lines dropped, unread kept", res.Files)
	}
	if f := fileOf(res, "lead/chat.jsonl"); f.DroppedLines != 25 || f.Unread {
		t.Fatalf("result %+v: want lead's chat, 25 lines dropped", res.Files)
	}
	msgs, _, err := s.Deliver(ctx, coder, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, re := deliveredIDs(msgs); strings.Join(got, " ") != strings.Join(ids[20:], " ") || re != 0 {
		t.Fatalf("after compaction the reader got %v (%d marked redelivered), want %v unmarked", got, re, ids[20:])
	}
	s.files.Acknowledge(ctx, "coder", coder.ID)
	if _, err := s.Compact(ctx, cfg, CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := logIDs(t, coderChat); strings.Join(got, " ") != strings.Join(ids[25:], " ") {
		t.Fatalf("everything read: kept %v, want the newest 5", got)
	}
	more := sendN(t, s, cfg, 2)
	msgs, _, _ = s.Deliver(ctx, coder, 0)
	if got, re := deliveredIDs(msgs); strings.Join(got, " ") != strings.Join(more, " ") || re != 0 {
		t.Fatalf("new messages after two compactions: got %v (%d redelivered), want %v", got, re, more)
	}
}

func fileOf(res CompactResult, suffix string) CompactedFile {
	for _, f := range res.Files {
		if strings.HasSuffix(f.Path, suffix) {
			return f
		}
	}
	return CompactedFile{}
}

// A cursor left on the old inode (a compaction killed before it moved
// the cursors, or any reader that kept one) finds its place by id: no
// message lost, none repeated, and another session's unacknowledged batch
// still comes again marked redelivered.
func TestCompactStaleCursorFindsItsPlace(t *testing.T) {
	s, cfg := leadAndCoder(t)
	ctx := context.Background()
	cfg.Retain.ChatLines = 3
	ids := sendN(t, s, cfg, 30)
	a := Session{ID: "ses_a", Agent: "coder", Purpose: storage.PurposeChat}
	s.Deliver(ctx, a, 10)
	s.files.Acknowledge(ctx, "coder", a.ID)
	s.Deliver(ctx, a, 5) // a batch a never acknowledges: a dies
	cursorPath, _ := s.files.ReadCursorPath("coder")
	before, err := os.ReadFile(cursorPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Compact(ctx, cfg, CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(cursorPath)
	if bytes.Equal(before, after) {
		t.Fatal("compaction did not move the cursors to the new file")
	}
	for _, stale := range []bool{false, true} {
		t.Run(fmt.Sprintf("stale=%v", stale), func(t *testing.T) {
			if stale {
				if err := os.WriteFile(cursorPath, before, storage.ModeFile); err != nil {
					t.Fatal(err)
				}
			} else {
				os.WriteFile(cursorPath, after, storage.ModeFile)
			}
			b := Session{ID: "ses_b", Agent: "coder", Purpose: storage.PurposeChat}
			msgs, _, err := s.Deliver(ctx, b, 0)
			if err != nil {
				t.Fatal(err)
			}
			got, re := deliveredIDs(msgs)
			if strings.Join(got, " ") != strings.Join(ids[10:], " ") {
				t.Fatalf("got %v, want %v", got, ids[10:])
			}
			for i, m := range msgs {
				if m.Redelivered != (i < 5) {
					t.Fatalf("message %d redelivered=%v: only a's unacknowledged 5 are marked (%d marked)", i, m.Redelivered, re)
				}
			}
		})
	}
}

// A dry run drops nothing and says what a run would drop.
func TestCompactDryRun(t *testing.T) {
	s, cfg := leadAndCoder(t)
	ctx := context.Background()
	cfg.Retain.ChatLines = 2
	sendN(t, s, cfg, 10)
	s.files.ReadUnread(ctx, "coder", storage.StreamChat, storage.ReadOptions{})
	chat, _ := s.files.ChatPath("coder")
	before, _ := os.ReadFile(chat)
	res, err := s.Compact(ctx, cfg, CompactOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(chat); !bytes.Equal(before, now) {
		t.Fatal("a dry run changed the chat log")
	}
	if f := fileOf(res, "coder/chat.jsonl"); f.DroppedLines != 8 {
		t.Fatalf("dry run said %+v, want 8 lines of coder's chat", res.Files)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(chat), "compacted.json")); err == nil {
		t.Fatal("a dry run wrote the horizon")
	}
}

// Doctor's mirror check does not restore the copies compaction dropped
// (without the horizon it would: the test can fail).
func TestCompactHorizonDoctor(t *testing.T) {
	s, cfg := leadAndCoder(t)
	ctx := context.Background()
	cfg.Retain.ChatLines = 2
	// lead never read its chat: kept whole from coder's message on
	if _, err := s.Send(ctx, cfg, OutgoingMessage{From: "coder", To: "lead", Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	sendN(t, s, cfg, 6)
	s.files.ReadUnread(ctx, "coder", storage.StreamChat, storage.ReadOptions{})
	old := time.Now().Add(-2 * inFlight) // past doctor's in-flight window
	// the copies are old: rewrite both files' times the same way
	for _, agent := range []string{"lead", "coder"} {
		p, _ := s.files.ChatPath(agent)
		d, _ := os.ReadFile(p)
		d = agedLines(d, old)
		os.WriteFile(p, d, storage.ModeFile)
	}
	if _, err := s.Compact(ctx, cfg, CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	mirror := func() (n int) {
		problems, err := s.Doctor(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			if strings.Contains(p.Reason, "is missing from") {
				n++
			}
		}
		return n
	}
	if n := mirror(); n != 0 {
		t.Fatalf("doctor reports %d one-sided messages after a compaction", n)
	}
	horizon, _ := s.files.CompactionPath("coder")
	os.Remove(horizon)
	if n := mirror(); n != 5 {
		t.Fatalf("without the horizon doctor reports %d one-sided messages, want the 5 compacted from coder's log", n)
	}
}

// agedLines sets every line's createdAt to at.
func agedLines(data []byte, at time.Time) []byte {
	var out bytes.Buffer
	for _, l := range bytes.SplitAfter(data, []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var m map[string]any
		if json.Unmarshal(l, &m) != nil {
			out.Write(l)
			continue
		}
		m["createdAt"] = at.UTC().Format(time.RFC3339Nano)
		b, _ := json.Marshal(m)
		out.Write(append(b, '\n'))
	}
	return out.Bytes()
}

// writeNotification appends n to agent's notifications as it is, time
// included.
func writeNotification(t *testing.T, s *Store, agent string, n Notification) {
	t.Helper()
	path, _ := s.files.NotificationsPath(agent)
	if err := s.files.AppendJSONL(context.Background(), path, n); err != nil {
		t.Fatal(err)
	}
}

// Expired notifications are never delivered, counted or told, and the
// next read consumes them; an interrupt about a task still blocked does
// not expire even with a TTL; "never" keeps them.
func TestNotificationExpiry(t *testing.T) {
	s, _ := leadAndCoder(t)
	ctx := context.Background()
	old := time.Now().UTC().Add(-8 * 24 * time.Hour)
	writeNotification(t, s, "coder", Notification{ID: storage.NewID(storage.PrefixNotification), Type: storage.NotifyInfo, Message: "old", CreatedAt: old})
	writeNotification(t, s, "coder", Notification{ID: storage.NewID(storage.PrefixNotification), Type: storage.NotifyInfo, Message: "new", CreatedAt: time.Now().UTC()})
	ses := Session{ID: "ses_a", Agent: "coder", Purpose: storage.PurposeChat, CreatedAt: old.Add(-time.Hour)}
	u, err := s.Interrupt(ctx, ses)
	if err != nil || u.Count != 1 {
		t.Fatalf("unread count %d (%v), want 1: the old info expired", u.Count, err)
	}
	unread, _ := s.UnreadNotificationIDs(ctx, "coder")
	if len(unread) != 1 {
		t.Fatalf("status counts %d, want 1", len(unread))
	}
	ns, _, err := s.SessionNotifications(ctx, ses, false, 0)
	if err != nil || len(ns) != 1 || ns[0].Message != "new" {
		t.Fatalf("delivered %+v (%v), want only the new one", ns, err)
	}
	// "never": the old one would count again for a session that had not read it.
	cfg, err := storage.ParseConfig("config.toml", []byte("[notifications.ttl]\ninfo = \"never\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	s.files.SetNotificationTTLs(cfg)
	task := Session{ID: "ses_t", Agent: "coder", Purpose: storage.PurposeTask, CreatedAt: old.Add(-time.Hour)}
	if u, _ := s.Interrupt(ctx, task); u.Count != 2 {
		t.Fatalf("with info = never a task session counts %d, want 2", u.Count)
	}
	cfg, _ = storage.ParseConfig("config.toml", []byte("[notifications.ttl]\ninterrupt = \"1h\"\n"))
	s.files.SetNotificationTTLs(cfg)
	tk := Task{ID: storage.NewID(storage.PrefixTask), Title: "x", Assignee: "coder", Status: StatusInProgress, AipmStatus: StatusInProgress}
	setStatus := func(status string) {
		tk.Status, tk.AipmStatus = status, status
		if err := s.files.WriteDoc(filepath.Join(s.files.CollectionDir(storage.Tasks), tk.ID+".json"), tk, storage.ModeFile); err != nil {
			t.Fatal(err)
		}
	}
	setStatus(StatusBlocked)
	writeNotification(t, s, "coder", Notification{ID: storage.NewID(storage.PrefixNotification), Type: storage.NotifyInterrupt, Kind: interruptPause, Message: "stop", TaskID: tk.ID, CreatedAt: old})
	task.TaskID = tk.ID
	if u, _ := s.Interrupt(ctx, task); u.Interrupt == nil {
		t.Fatal("an interrupt about a task still blocked expired")
	}
	setStatus(StatusInProgress)
	task.ID = "ses_t2"
	if u, _ := s.Interrupt(ctx, task); u.Interrupt != nil || u.Count != 1 {
		t.Fatalf("an old interrupt about a task no longer blocked: interrupt %v, count %d, want none and 1 (the new info: this config expires the old one again)", u.Interrupt, u.Count)
	}
}

func TestNotificationTTLConfig(t *testing.T) {
	for _, tc := range []struct{ toml, err string }{
		{"[notifications.ttl]\ninfo = \"7d\"\nnew_message = \"90m\"\ninterrupt = \"never\"\n", ""},
		{"[notifications.ttl]\ninfo = \"soon\"\n", `config.toml:2: `},
		{"[notifications.ttl]\ninfo = \"0s\"\n", `must be positive`},
		{"[retention]\nchat_lines = -1\n", `config.toml:2: chat_lines = -1 must be at least 1`},
		{"[retention]\n\nreceipt_lines = 0\n", `config.toml:3: receipt_lines = 0 must be at least 1`},
		{"[retention]\nevery = \"never\"\nchat_lines = 5\n", ""},
	} {
		cfg, err := storage.ParseConfig("config.toml", []byte(tc.toml))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.toml, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want %q", tc.toml, err, tc.err)
		case tc.err == "" && strings.Contains(tc.toml, "7d"):
			if cfg.NotificationTTL(storage.NotifyInfo) != 7*24*time.Hour || cfg.NotificationTTL(storage.NotifyNewMessage) != 90*time.Minute || cfg.NotificationTTL(storage.NotifyInterrupt) != 0 {
				t.Errorf("TTLs %v %v %v", cfg.NotificationTTL(storage.NotifyInfo), cfg.NotificationTTL(storage.NotifyNewMessage), cfg.NotificationTTL(storage.NotifyInterrupt))
			}
		case tc.err == "" && strings.Contains(tc.toml, "never"):
			if r := cfg.Retention(); r.Every.Duration != 0 || r.ChatLines != 5 || r.ReceiptLines != storage.DefaultRetention.ReceiptLines {
				t.Errorf("retention %+v", r)
			}
		}
	}
	var none *storage.Config
	if none.NotificationTTL(storage.NotifyNewMessage) != 24*time.Hour || none.NotificationTTL(storage.NotifyInterrupt) != 0 {
		t.Error("defaults: new_message 24h, interrupt never")
	}
}

// Unread notifications of a session purpose that never read are kept
// unless expired; the rest go by the retention.
func TestCompactNotifications(t *testing.T) {
	s, cfg := leadAndCoder(t)
	ctx := context.Background()
	cfg.Retain.NotificationLines = 1
	old := time.Now().UTC().Add(-8 * 24 * time.Hour)
	var ids []string
	for i, at := range []time.Time{old, old, time.Now().UTC(), time.Now().UTC()} {
		n := Notification{ID: storage.NewID(storage.PrefixNotification), Type: storage.NotifyInfo, Message: fmt.Sprint(i), CreatedAt: at}
		writeNotification(t, s, "coder", n)
		ids = append(ids, n.ID)
	}
	if _, err := s.Compact(ctx, cfg, CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	path, _ := s.files.NotificationsPath("coder")
	if got := logIDs(t, path); strings.Join(got, " ") != strings.Join(ids[2:], " ") {
		t.Fatalf("nobody read: kept %v, want the two unexpired %v", got, ids[2:])
	}
	ses := Session{ID: "ses_a", Agent: "coder", Purpose: storage.PurposeChat}
	ns, _, _ := s.SessionNotifications(ctx, ses, false, 0)
	if len(ns) != 2 {
		t.Fatalf("delivered %d after compaction, want 2", len(ns))
	}
}

// A torn last line (a writer killed mid-line) is kept as it is, for
// doctor; a temporary file a killed compaction left is removed.
func TestCompactTornTailAndLeftovers(t *testing.T) {
	s, cfg := leadAndCoder(t)
	ctx := context.Background()
	cfg.Retain.ChatLines = 2
	sendN(t, s, cfg, 6)
	s.files.ReadUnread(ctx, "coder", storage.StreamChat, storage.ReadOptions{})
	chat, _ := s.files.ChatPath("coder")
	torn := []byte(`{"id":"msg_torn","senderId":"lead","cont`)
	f, _ := os.OpenFile(chat, os.O_APPEND|os.O_WRONLY, 0)
	f.Write(torn)
	f.Close()
	leftover := filepath.Join(filepath.Dir(chat), ".chat.jsonl.tmp-compact-123")
	os.WriteFile(leftover, []byte("half a copy"), storage.ModeFile)
	if _, err := s.Compact(ctx, cfg, CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(chat)
	if !bytes.HasSuffix(data, torn) || len(logIDs(t, chat)) != 2 {
		t.Fatalf("after compaction: %q; want the newest 2 lines and the torn tail", data)
	}
	if _, err := os.Stat(leftover); err == nil {
		t.Fatal("the leftover temporary file is still there")
	}
}

// TestCompactRollsGroupSendsForward: a group send killed after the
// sender's copy is completed before any log is cut: the cut's horizon
// would otherwise excuse the missing copy, and doctor never write it.
func TestCompactRollsGroupSendsForward(t *testing.T) {
	s, cfg := groupStore(t)
	ctx := context.Background()
	cfg.Retain.ChatLines = 1
	old := time.Now().Add(-2 * inFlight).UTC().Format(timeFormat)
	lost := Message{ID: storage.NewID(storage.PrefixMessage), SenderID: "alice", ReceiverIDs: []string{"bob", "carol"}, Content: "killed midway", CreatedAt: old}
	for _, agent := range []string{"alice", "bob"} { // carol's copy was never written
		path, _ := s.files.ChatPath(agent)
		if err := s.files.AppendJSONL(ctx, path, lost); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 4; i++ {
		if _, err := s.Send(ctx, cfg, OutgoingMessage{From: "dave", To: "carol", Content: fmt.Sprint("note ", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.Unread(ctx, "carol", 0, false); err != nil {
		t.Fatal(err)
	}
	res, err := s.Compact(ctx, cfg, CompactOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := copiesOf(t, s, "alice", "bob", "carol")[lost.ID]; got != 3 || res.Restored != 1 {
		t.Fatalf("after compaction the message is in %d logs (restored %d); want all 3", got, res.Restored)
	}
	if problems, err := s.Doctor(ctx, false); err != nil || len(problems) != 0 {
		t.Fatalf("doctor after compaction: %v %v", problems, err)
	}
}

// TestCompactKeepsUnreadReceipts: what a message still waiting went
// through stays, whatever the receipts' retention: aipm status would flag a
// message told by a hook as never seen.
func TestCompactKeepsUnreadReceipts(t *testing.T) {
	s, cfg := leadAndCoder(t)
	ctx := context.Background()
	cfg.Retain.ReceiptLines = 1
	var ids []string
	for i := 0; i < 2; i++ {
		m, err := s.Send(ctx, cfg, OutgoingMessage{From: "lead", To: "coder", Content: fmt.Sprint("waiting ", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
		s.files.WriteReceipt(ctx, "coder", storage.ReceiptSurfaced, "ses_x", "hook PostToolUse", []string{m.ID})
	}
	before := time.Now().Add(time.Hour)
	if u, _ := s.UnseenMessages(ctx, "coder", before); u.Count != 0 {
		t.Fatalf("unseen before compaction: %d", u.Count)
	}
	if _, err := s.Compact(ctx, cfg, CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	if u, _ := s.UnseenMessages(ctx, "coder", before); u.Count != 0 {
		t.Fatalf("after compaction %d surfaced messages count as never seen", u.Count)
	}
	seen, _ := s.files.Receipts("coder")
	for _, id := range ids {
		if seen[id].SurfacedAt.IsZero() {
			t.Errorf("the receipt of %s, unread, was dropped", id)
		}
	}
}
