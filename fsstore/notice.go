package fsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"aipm/fsstore/internal/storage"
	"aipm/internal/lockedfile"
)

// Notification is one line of agents/<agent>/notifications.jsonl.
type Notification struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Message   string    `json:"message"`
	TaskID    string    `json:"taskId,omitempty"`
	From      string    `json:"from,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	// Key makes a notification idempotent: Notify writes no second line
	// with the same key (an interrupt's key is derived from the task state
	// that caused it, so whoever notices the change first writes it once).
	Key string `json:"key,omitempty"`
	// Kind is an interrupt's kind (DESIGN section 11, seed 004): pause
	// (its task was blocked: stop, report, wait), cancel (its task was
	// cancelled: stop, drop the work); empty for a plain stop (aipm
	// interrupt). WriteInterrupt sets it.
	Kind string `json:"kind,omitempty"`
	// Redelivered is set on delivery (never stored) when the notification
	// may have reached a client before: a session died before acknowledging it.
	Redelivered bool `json:"redelivered,omitempty"`
	// Expired is set (never stored) on a notification shown to a human
	// (aipm notifications) that outlived its time to live: no session
	// will be given it.
	Expired bool `json:"expired,omitempty"`
}

// Interrupt kinds (Notification.Kind).
const (
	interruptPause  = "pause"
	interruptCancel = "cancel"
)

// interruptKey is the key of the interrupt caused by task t's current
// status change.
func interruptKey(t Task) string {
	return "interrupt:" + t.ID + ":" + t.Status + ":" + t.StatusChangedAt.UTC().Format(time.RFC3339Nano)
}

// concerns says whether ses may see, count and consume n (DESIGN section 6):
// one about a task only a task session on that task (its next one too, if
// none is live now: the notification waits for it); an interrupt about no
// task only the sessions that were live when it was written (begun before
// it); anything else every session of the agent. A note that no session on
// its task could act on (a task request rejected) is written about no task
// (Decide), naming the task in its text.
func (n Notification) concerns(ses Session) bool {
	switch {
	case n.TaskID != "":
		return ses.Purpose == storage.PurposeTask && ses.TaskID == n.TaskID
	case n.Type == storage.NotifyInterrupt:
		return !ses.CreatedAt.After(n.CreatedAt)
	}
	return true
}

// unreadNotifications counts agent's notifications that no session has
// read (what aipm status shows; nothing is marked read).
func (s *Store) unreadNotifications(ctx context.Context, agent string) (int, error) {
	ids, err := s.UnreadNotificationIDs(ctx, agent)
	return len(ids), err
}

// UnreadNotificationIDs returns the ids of agent's notifications that no
// session has read (those aipm status counts), peeking: nothing is marked
// read. One about a task is unread until a session on that task read it,
// any other until some session did.
func (s *Store) UnreadNotificationIDs(ctx context.Context, agent string) (map[string]bool, error) {
	cursorPath, err := s.files.ReadCursorPath(agent)
	if err != nil {
		return nil, err
	}
	cursors, err := s.files.ReadCursors(cursorPath)
	if err != nil {
		return nil, err
	}
	unreadBy := map[string]int{} // id -> how many of its readers have not read it
	need := map[string]int{}     // id -> how many must not have, for it to count
	now := time.Now()
	// unread counts the notifications past stream's cursor that take says
	// are its own.
	unread := func(stream string, take func(Notification) bool) error {
		var last Notification
		_, err := s.files.ReadUnread(ctx, agent, stream, storage.ReadOptions{
			Peek: true,
			ReadOptions: lockedfile.ReadOptions{
				Check: func(r storage.Record) (err error) { last, err = decodeNotification(r); return err },
				Match: func(storage.Record) bool {
					if s.expired(last, now) || !take(last) {
						return false // never counted
					}
					unreadBy[last.ID]++
					need[last.ID] = 1
					if last.TaskID == "" {
						need[last.ID] = 2 // for every session: read once any has
					}
					return false // counted, not returned
				},
			},
		})
		return err
	}
	if err := unread(storage.NotificationStream(storage.PurposeChat), func(n Notification) bool { return n.TaskID == "" }); err != nil {
		return nil, err
	}
	// The task purpose's stream holds what is addressed to no task, and
	// what is addressed to a task whose own cursor is not written yet (it
	// starts there).
	if err := unread(storage.NotificationStream(storage.PurposeTask), func(n Notification) bool {
		_, own := cursors[storage.TaskNotificationStream(n.TaskID)]
		return n.TaskID == "" || !own
	}); err != nil {
		return nil, err
	}
	for stream := range cursors {
		if task := storage.TaskOfStream(stream); task != "" {
			if err := unread(stream, func(n Notification) bool { return n.TaskID == task }); err != nil {
				return nil, err
			}
		}
	}
	out := map[string]bool{}
	for id, c := range unreadBy {
		if c >= need[id] {
			out[id] = true
		}
	}
	return out, nil
}

// FollowNotifications reads agent's notifications past cur without a lock
// and without saving a cursor (aipm notifications, and its --follow): the
// notifications past cur, oldest first, the cursor after them, and the
// lines that are not notifications. A replaced or truncated file is handled
// as ReadUnread handles it.
func (s *Store) FollowNotifications(agent string, cur storage.Cursor) ([]Notification, storage.Cursor, []*storage.LineError, error) {
	path, err := s.files.NotificationsPath(agent)
	if err != nil {
		return nil, cur, nil, err
	}
	res, err := lockedfile.ReadPast(path, cur, lockedfile.ReadOptions{})
	if err != nil {
		return nil, cur, nil, s.files.Failed("read", path, err)
	}
	bad := res.Bad
	out := make([]Notification, 0, len(res.Records))
	now := time.Now()
	for _, r := range res.Records {
		n, err := decodeNotification(r)
		if err != nil {
			bad = append(bad, &storage.LineError{Line: r.Line, Err: err})
			continue
		}
		n.Expired = s.expired(n, now)
		out = append(out, n.served(lineOf(s.files.Rel(path), r.Line)))
	}
	for _, le := range bad {
		le.Path = s.files.Rel(path)
	}
	return out, res.Next, unfinishedLine(s.files.Rel(path), res, bad), nil
}

// checkNotification is the schema of a notifications line.
func checkNotification(r storage.Record) error {
	_, err := decodeNotification(r)
	return err
}

// decodeNotification decodes and checks a notifications line.
func decodeNotification(r storage.Record) (Notification, error) {
	var n Notification
	if err := json.Unmarshal(r.Data, &n); err != nil {
		return n, fmt.Errorf("not a notification: %s", lockedfile.JSONWords(r.Data, err))
	}
	return n, checkDecoded(n)
}

func checkDecoded(n Notification) error {
	switch {
	case n.Type != storage.NotifyInterrupt && n.Type != storage.NotifyInfo:
		return fmt.Errorf("not a notification: type %q is neither %s nor %s", n.Type, storage.NotifyInterrupt, storage.NotifyInfo)
	case n.CreatedAt.IsZero():
		return errors.New("not a notification: createdAt is missing")
	case n.TaskID != "" && storage.CheckID(storage.PrefixTask, n.TaskID) != nil:
		return fmt.Errorf("not a notification: taskId %q is not a task id", n.TaskID)
	}
	return nil
}

// sessionNotifications reads the notifications that concern ses, strictly:
// a line that cannot be decoded stops the read with an error naming
// path:line, and nothing past it is consumed.
func (s *Store) sessionNotifications(ctx context.Context, ses Session, peek bool, limit int) ([]Notification, bool, error) {
	return s.readNotifications(ctx, ses, storage.ReadOptions{ReadOptions: lockedfile.ReadOptions{Limit: limit}, Peek: peek}, nil)
}

// readNotifications is sessionNotifications with opt's Peek and Limit;
// keep, if not nil, sees each notification that concerns ses and says
// whether to return it (those it refuses are still consumed unless Peek).
func (s *Store) readNotifications(ctx context.Context, ses Session, opt storage.ReadOptions, keep func(Notification) bool) ([]Notification, bool, error) {
	var match func(storage.Record, Notification) bool
	if keep != nil {
		match = func(_ storage.Record, n Notification) bool { return keep(n) }
	}
	out, res, err := s.readNotificationRecords(ctx, ses, opt, match)
	return out, res.More, err
}

// Unread is what Interrupt finds among a session's unread notifications.
type Unread struct {
	// Interrupt is the first unread interrupt that stops the session.
	Interrupt *Notification
	// Count is the number of unread notifications that concern the
	// session; New, of them, those its model was not told of (past
	// Surfaced.Notifications).
	Count, New int
	// Through is the mark just past the notifications counted.
	Through storage.Mark
	// expires is when the first of those counted expires (zero: none
	// does): the counts cached past it are stale.
	expires time.Time
}

// unreadKey is what the counts of ses from mark are kept under: the
// session's id first, so that its end drops them all (sessionEnded). A
// session's calls count from more than one mark (before and after what a
// call told it), so each mark has its own.
func unreadKey(ses Session, mark storage.Mark) string {
	return fmt.Sprintf("%s\x00%s\x00%d\x00%d", ses.ID, ses.Purpose, mark.Inode, mark.Offset)
}

// Interrupt returns the first unread interrupt that stops ses (DESIGN
// section 6), and the number of unread notifications that concern ses,
// and of them those not told yet. An interrupt about a task stops it only
// while the task is still blocked or cancelled (a task resumed since makes
// it moot). An undecodable line is an error wrapping
// ErrNotificationsUnreadable.
//
// While neither the notifications file nor read.json changed since this
// process last found no interrupt among ses's unread notifications, the
// counts are reused after two stats instead of read again.
func (s *Store) Interrupt(ctx context.Context, ses Session) (Unread, error) {
	stamps, cacheable := s.unreadStamps(ses.Agent)
	mark := ses.Surfaced.Notifications
	key := unreadKey(ses, mark)
	if cacheable {
		if st, ok := s.caches.unread.Get(key, stamps...); ok && (st.expires.IsZero() || time.Now().Before(st.expires)) {
			return st, nil
		}
	}
	// Count what concerns ses, keeping only the interrupts: a pile of
	// unread notifications costs a read, not memory. Told ones are those
	// the mark covers; the file read is known only after the read, so they
	// are counted by offset and dropped if it is not the mark's.
	var u Unread
	told := 0
	interrupts, res, err := s.readNotificationRecords(ctx, ses, storage.ReadOptions{Peek: true}, func(r storage.Record, n Notification) bool {
		u.Count++
		if at := s.expiresAt(n); !at.IsZero() && (u.expires.IsZero() || at.Before(u.expires)) {
			u.expires = at
		}
		if r.Offset < mark.Offset {
			told++
		}
		return n.Type == storage.NotifyInterrupt
	})
	if err != nil {
		return Unread{}, err
	}
	u.New = u.Count
	if res.Next.Inode == mark.Inode {
		u.New -= told
	}
	u.Through = markAfter(res)
	// What the session was handed is read once it makes its next call (a
	// batch only shown: a call that complies): until then an interrupt in
	// it still stops it, and one only shown is unread (and told).
	held, shown, err := s.held(ctx, ses)
	if err != nil {
		return Unread{}, err
	}
	u.Count += len(shown)
	interrupts = append(slices.DeleteFunc(held, func(n Notification) bool { return n.Type != storage.NotifyInterrupt }), interrupts...)
	if cacheable && len(interrupts) == 0 && ses.EndedAt.IsZero() { // an ended session's are not asked again
		s.caches.unread.Put(key, u, stamps...)
	}
	for i, n := range interrupts {
		if s.stops(n) {
			u.Interrupt = &interrupts[i]
			return u, nil
		}
	}
	return u, nil
}

// ShowInterrupt hands session ses the unread notifications that concern
// it up to and including the interrupt intr, the one its model is shown
// whole (a replaced answer, a client hook): like get_notifications'
// batch, they are read once the session makes its next call (read means
// received: DESIGN sections 4 and 11), and until then intr still stops the
// session. show gets those before intr, which the caller shows with it;
// if it cannot show them whole (false), nothing is handed. It says
// whether they were handed.
func (s *Store) ShowInterrupt(ctx context.Context, ses Session, intr Notification, show func(earlier []Notification) bool) (bool, error) {
	ns, _, err := s.readNotifications(ctx, ses, storage.ReadOptions{Peek: true}, nil)
	if err != nil {
		return false, err
	}
	i := slices.IndexFunc(ns, func(n Notification) bool { return n.ID == intr.ID })
	if i < 0 || !show(ns[:i]) {
		return false, nil // read, or handed already; or not shown
	}
	handed, _, err := s.readNotifications(ctx, ses, storage.ReadOptions{ReadOptions: lockedfile.ReadOptions{Limit: i + 1}, Shown: true}, nil)
	if err != nil {
		return false, err
	}
	if n := len(handed); n == 0 || handed[n-1].ID != intr.ID {
		// What lay before it changed meanwhile (one expired): take the
		// batch back rather than hand something not shown.
		_, err := s.Unhand(ctx, ses.Agent, ses.ID)
		return false, err
	}
	return true, nil
}

// stops is the one rule of whether the interrupt n, unread, stops the
// session it concerns: one about no task, or an aipm interrupt --task
// (a plain stop, whatever the task's status), always; one that reports a
// task's status set to blocked or cancelled (a pause or cancel) only while
// the task still is: a task moved back since makes it moot.
func (s *Store) stops(n Notification) bool {
	if n.TaskID == "" || !n.reportsStatus() {
		return true
	}
	return s.taskStopped(n.TaskID)
}

// reportsStatus says whether the interrupt n reports its task's status set
// to blocked or cancelled (its kind, or, written before kinds were, its
// key), rather than an aipm interrupt --task.
func (n Notification) reportsStatus() bool {
	return n.Kind != "" || strings.HasPrefix(n.Key, "interrupt:")
}

// taskStopped says whether task id is blocked or cancelled.
func (s *Store) taskStopped(id string) bool {
	t, err := s.Task(id)
	return err == nil && StopsWork(t.Status)
}

// unreadStamps stamps the two files a session's unread notifications
// depend on: the agent's notifications and its read cursors.
func (s *Store) unreadStamps(agent string) ([]lockedfile.Stamp, bool) {
	return s.streamStamps(agent, storage.StreamNotifications)
}

// streamStamps stamps the two files what is unread in one of agent's
// streams depends on: its log and the agent's read cursors.
func (s *Store) streamStamps(agent, stream string) ([]lockedfile.Stamp, bool) {
	logPath, err := s.files.StreamPath(agent, stream)
	if err != nil {
		return nil, false
	}
	cursorPath, err := s.files.ReadCursorPath(agent)
	if err != nil {
		return nil, false
	}
	log, err := lockedfile.StampPath(logPath)
	if err != nil {
		return nil, false
	}
	cur, err := lockedfile.StampPath(cursorPath)
	if err != nil {
		return nil, false
	}
	return []lockedfile.Stamp{log, cur}, true
}

// Notify appends a notification for agent and returns it, with its new id
// and time. A notification with a Key already in the file is not written
// again: what is returned then is in no file (its id names nothing).
func (s *Store) Notify(ctx context.Context, agent string, n Notification) (Notification, error) {
	path, err := s.files.NotificationsPath(agent)
	if err != nil {
		return n, err
	}
	if n.Type == "" {
		n.Type = storage.NotifyInfo
	}
	n.ID, n.CreatedAt, n.Redelivered = storage.NewID(storage.PrefixNotification), time.Now().UTC(), false
	if n.Key == "" {
		return n, s.files.AppendJSONL(ctx, path, n)
	}
	line, err := json.Marshal(n)
	if err != nil {
		return n, s.files.Failed("append", path, fmt.Errorf("encode: %w", err))
	}
	key, _ := json.Marshal(n.Key)
	return n, s.files.AppendUnless(ctx, path, line, []byte(`"key":`+string(key)))
}

// SessionNotifications returns the unread notifications that concern ses,
// the oldest first, at most limit of them (0: all); more says others wait.
// Unless peek, they are handed to the session and marked read when a later
// call of it proves they were (Acknowledge). A batch the session holds that
// was only shown to its model (an interrupt in a replaced answer:
// ShowInterrupt) is unread until a call that complies reads it, so it
// comes first; a read (not a peek) reads it now.
func (s *Store) SessionNotifications(ctx context.Context, ses Session, peek bool, limit int) (ns []Notification, more bool, err error) {
	_, held, err := s.held(ctx, ses)
	if err != nil {
		return nil, false, err
	}
	for i := range held {
		held[i].Redelivered = true // its model was shown it before, in a replaced answer or a hook
	}
	ns, more, err = s.sessionNotifications(ctx, ses, peek, limit)
	return append(held, ns...), more, err
}

// ListNotifications is SessionNotifications for the session's own listing
// (get_notifications), which acknowledges what the session holds itself
// (the gate leaves the stream to it): a read acknowledges it in its own
// write; a peek acknowledges it first, but for a batch only shown, which it
// lists and leaves unread.
func (s *Store) ListNotifications(ctx context.Context, ses Session, peek bool, limit int) (ns []Notification, more bool, err error) {
	if peek {
		if _, err := s.files.AcknowledgeCall(ctx, ses.Agent, ses.ID, "get_notifications", false); err != nil {
			return nil, false, err
		}
	}
	return s.SessionNotifications(ctx, ses, peek, limit)
}

// NewestFirst reverses a list of notifications read oldest first.
func NewestFirst(ns []Notification) []Notification {
	out := slices.Clone(ns)
	slices.Reverse(out)
	return out
}

// expired says whether n has outlived its type's time to live at now (the
// one rule of expiry: an expired notification is never delivered, counted
// or told, and the next read consumes it silently). An interrupt about a
// task that is still blocked or cancelled never expires: the task session
// must still stop.
func (s *Store) expired(n Notification, now time.Time) bool {
	ttl := s.files.NotificationTTL(n.Type)
	if ttl <= 0 || now.Sub(n.CreatedAt) < ttl {
		return false
	}
	return !(n.Type == storage.NotifyInterrupt && n.TaskID != "" && n.reportsStatus() && s.taskStopped(n.TaskID))
}

// expiresAt is when n expires (zero: never, or not by time alone).
func (s *Store) expiresAt(n Notification) time.Time {
	ttl := s.files.NotificationTTL(n.Type)
	if ttl <= 0 {
		return time.Time{}
	}
	return n.CreatedAt.Add(ttl)
}
