package fsstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/tidwall/gjson"

	"aipm/fsstore/internal/storage"
	"aipm/internal/lockedfile"
)

// noticeStream is one of the read.json cursors a session reads its
// notifications by: its purpose's (what is addressed to no task), and for
// a task session the one of its task (TaskNotificationStream: what is
// addressed to that task). Each notification is in exactly one stream of
// the task purpose (and, addressed to no task, one of the chat purpose), so
// a session on one task passes over what waits for another without taking
// it: the purpose's read writes the other task's cursor first
// (ReadOptions.SubStream).
type noticeStream struct {
	name string
	task string // the task of a per-task stream
}

// takes says whether n is in stream st.
func (st noticeStream) takes(n Notification) bool { return n.TaskID == st.task }

// noticeStreams are the streams ses reads, its purpose's first.
func noticeStreams(ses Session) []noticeStream {
	out := []noticeStream{{name: storage.NotificationStream(ses.Purpose)}}
	if ses.Purpose == storage.PurposeTask && ses.TaskID != "" {
		out = append(out, noticeStream{name: storage.TaskNotificationStream(ses.TaskID), task: ses.TaskID})
	}
	return out
}

// readNotificationRecords is readNotifications with the records: match,
// if not nil, sees each record that concerns ses with its notification.
// An expired notification concerns no one: it is passed over, and a read
// that is not a peek consumes it without returning it. The records of the
// session's streams (noticeStreams) come merged, in file order; a limited
// read that is not a peek takes from each stream its share of the first
// opt.Limit, as a peek finds them.
func (s *Store) readNotificationRecords(ctx context.Context, ses Session, opt storage.ReadOptions, match func(storage.Record, Notification) bool) ([]Notification, storage.ReadResult, error) {
	streams := noticeStreams(ses)
	shares := make([]int, len(streams))
	for i := range shares {
		shares[i] = opt.Limit
	}
	if opt.Limit > 0 && !opt.Peek && len(streams) > 1 {
		peek := opt
		peek.Peek, peek.Shown = true, false
		_, res, err := s.readNotificationRecords(ctx, ses, peek, match)
		if err != nil {
			return nil, res, err
		}
		clear(shares)
		for _, r := range res.Records {
			if i := slices.IndexFunc(streams, func(st noticeStream) bool { return st.task == gjson.GetBytes(r.Data, "taskId").Str }); i >= 0 {
				shares[i]++
			}
		}
	}
	var out []Notification
	var res storage.ReadResult
	read := false
	for i, st := range streams {
		if opt.Limit > 0 && shares[i] == 0 {
			// Nothing of this stream in the page: a read still
			// acknowledges the batch the session held in it, as its read
			// would have.
			if !opt.Peek {
				if _, _, err := s.files.AcknowledgeWhere(ctx, ses.Agent, ses.ID, opt.Via, func(stream string, _ *storage.PendingBatch) bool { return stream == st.name }); err != nil {
					return nil, res, err
				}
			}
			continue
		}
		o := opt
		o.Limit = shares[i]
		ns, r, err := s.readNoticeStream(ctx, ses, st, o, match)
		if err != nil {
			return nil, r, err
		}
		if !read {
			out, res, read = ns, r, true
			continue
		}
		out, res = mergeNotices(out, res, ns, r)
	}
	if opt.Limit > 0 && len(out) > opt.Limit {
		out, res.Records, res.Redelivered, res.More = out[:opt.Limit], res.Records[:opt.Limit], res.Redelivered[:opt.Limit], true
	}
	return out, res, nil
}

// readNoticeStream reads ses's notifications in stream st as opt says
// (readNotificationRecords).
func (s *Store) readNoticeStream(ctx context.Context, ses Session, st noticeStream, opt storage.ReadOptions, match func(storage.Record, Notification) bool) ([]Notification, storage.ReadResult, error) {
	var last Notification // decoded once by Check, used by Match
	opt.Session, opt.Strict = ses.ID, true
	opt.Check = func(r storage.Record) error {
		var err error
		last, err = decodeNotification(r)
		return err
	}
	now := time.Now()
	opt.Match = func(r storage.Record) bool {
		return st.takes(last) && last.concerns(ses) && !s.expired(last, now) && (match == nil || match(r, last))
	}
	if st.task == "" && ses.Purpose == storage.PurposeTask {
		// What waits for a session on another task keeps its place there.
		opt.SubStream = func(storage.Record) string { return last.TaskID }
	}
	res, err := s.files.ReadUnread(ctx, ses.Agent, st.name, opt)
	if err != nil {
		return nil, res, fmt.Errorf("%w: %w; run aipm doctor (--repair moves a bad line to quarantine/)", ErrNotificationsUnreadable, err)
	}
	out := make([]Notification, len(res.Records))
	for i, r := range res.Records {
		if err := json.Unmarshal(r.Data, &out[i]); err != nil {
			return nil, res, fmt.Errorf("notification at line %d: %w", r.Line, err)
		}
		out[i].Redelivered = res.Redelivered[i]
		if path, err := s.files.NotificationsPath(ses.Agent); err == nil {
			out[i] = out[i].served(lineOf(s.files.Rel(path), r.Line))
		}
	}
	return out, res, nil
}

// mergeNotices merges what two streams of one log returned (ns, r) into
// what was merged so far (out, res), in file order: the records, and the
// place after both (the later Next: the mark of what was seen).
func mergeNotices(out []Notification, res storage.ReadResult, ns []Notification, r storage.ReadResult) ([]Notification, storage.ReadResult) {
	type item struct {
		n   Notification
		rec storage.Record
		re  bool
	}
	items := make([]item, 0, len(out)+len(ns))
	for i := range out {
		items = append(items, item{out[i], res.Records[i], res.Redelivered[i]})
	}
	for i := range ns {
		items = append(items, item{ns[i], r.Records[i], r.Redelivered[i]})
	}
	slices.SortStableFunc(items, func(a, b item) int { return cmp.Compare(a.rec.Offset, b.rec.Offset) })
	merged := res
	merged.Records, merged.Redelivered, out = nil, nil, nil
	for _, it := range items {
		out = append(out, it.n)
		merged.Records = append(merged.Records, it.rec)
		merged.Redelivered = append(merged.Redelivered, it.re)
	}
	merged.More = res.More || r.More
	if r.Next.Inode != res.Next.Inode || r.Next.Offset > res.Next.Offset {
		merged.Next = r.Next
	}
	merged.Bad = append(res.Bad, r.Bad...)
	return out, merged
}

// held are the notifications that concern ses in the batches of
// notifications handed to it and not acknowledged yet (ShowInterrupt, or
// get_notifications), oldest first, and of them those in a batch only
// shown (PendingBatch.Shown).
func (s *Store) held(ctx context.Context, ses Session) (all, shown []Notification, err error) {
	cursorPath, err := s.files.ReadCursorPath(ses.Agent)
	if err != nil {
		return nil, nil, err
	}
	cursors, err := s.files.ReadCursors(cursorPath)
	if err != nil {
		return nil, nil, err
	}
	path, err := s.files.NotificationsPath(ses.Agent)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	type heldOne struct {
		n      Notification
		offset int64
		shown  bool
	}
	var found []heldOne
	for _, st := range noticeStreams(ses) {
		sc := storage.CursorOf(cursors, st.name)
		if sc.Pending == nil || sc.Pending.Session != ses.ID {
			continue
		}
		to := sc.Pending.To
		res, err := lockedfile.ReadPast(path, sc.Cursor, lockedfile.ReadOptions{Match: func(r storage.Record) bool {
			if r.Offset >= to.Offset {
				return false
			}
			n, err := decodeNotification(r)
			if err == nil && st.takes(n) && n.concerns(ses) && !s.expired(n, now) {
				found = append(found, heldOne{n.served(lineOf(s.files.Rel(path), r.Line)), r.Offset, sc.Pending.Shown})
			}
			return false
		}})
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrNotificationsUnreadable, err)
		}
		if to.Inode != 0 && res.Next.Inode != to.Inode {
			return nil, nil, nil // the file was replaced since: the batch comes again, marked
		}
	}
	slices.SortStableFunc(found, func(a, b heldOne) int { return cmp.Compare(a.offset, b.offset) })
	for _, h := range found {
		all = append(all, h.n)
		if h.shown {
			shown = append(shown, h.n)
		}
	}
	return all, shown, ctx.Err()
}

// pruneTaskCursors removes from agent's read.json the per-task
// notifications cursors that say nothing their absence does not: one
// with no batch handed out, on the file its purpose's cursor is on, and
// with no notification of its task (that a session may still be given)
// at or past the earlier of the two places. Absent, it starts where its
// purpose's cursor is (CursorOf), and reads the same: nothing of its task
// lies between, and what comes later comes after both. So read.json keeps
// a cursor for the tasks with something unread, not for every task that
// ever had a notification (compaction calls it).
func (s *Store) pruneTaskCursors(ctx context.Context, agent string) error {
	cursorPath, err := s.files.ReadCursorPath(agent)
	if err != nil {
		return err
	}
	path, err := s.files.NotificationsPath(agent)
	if err != nil {
		return err
	}
	cursors, err := s.files.ReadCursors(cursorPath)
	if err != nil || !slices.ContainsFunc(slices.Collect(maps.Keys(cursors)), func(k string) bool { return storage.TaskOfStream(k) != "" }) {
		return err
	}
	_, err = storage.UpdateDoc(ctx, s.files, cursorPath, storage.ModeFile, func(cursors *storage.Cursors, _ bool) error {
		purpose, from := idleTaskCursors(*cursors)
		if len(from) == 0 {
			return storage.ErrNoChange
		}
		if !s.noneOwnPast(path, purpose, from) || len(from) == 0 {
			return storage.ErrNoChange // not understood, or every one still has something
		}
		for task := range from {
			delete(*cursors, storage.TaskNotificationStream(task))
		}
		return nil
	})
	return err
}

// idleTaskCursors are the per-task notifications cursors of cursors with no
// batch handed out, on the file the task purpose's cursor (purpose) is on
// (or at the start of any): task -> the earlier of its place and purpose's.
func idleTaskCursors(cursors storage.Cursors) (purpose storage.Cursor, from map[string]int64) {
	purpose = storage.CursorOf(cursors, storage.NotificationStream(storage.PurposeTask)).Cursor
	if purpose.Inode == 0 {
		return purpose, nil // never read: nothing to compare with
	}
	from = map[string]int64{}
	for key, sc := range cursors {
		task := storage.TaskOfStream(key)
		fresh := sc.Inode == 0 && sc.Offset == 0 && sc.LastID == "" // the start of any file
		if task != "" && sc.Pending == nil && (sc.Inode == purpose.Inode || fresh) {
			from[task] = min(sc.Offset, purpose.Offset)
		}
	}
	return purpose, from
}

// noneOwnPast deletes from `from` (task -> place) each task with a
// notification at or past its place in the log at path that a session
// may still be given (not expired). It says false when the log is not the
// file purpose is on, or has a line not understood: nothing is known then.
func (s *Store) noneOwnPast(path string, purpose storage.Cursor, from map[string]int64) bool {
	start := purpose.Offset
	for _, off := range from {
		start = min(start, off)
	}
	now := time.Now()
	res, err := lockedfile.ReadPast(path, storage.Cursor{Offset: start, Inode: purpose.Inode}, lockedfile.ReadOptions{Match: func(r storage.Record) bool {
		task := gjson.GetBytes(r.Data, "taskId").Str
		if off, ok := from[task]; ok && r.Offset >= off {
			if n, err := decodeNotification(r); err != nil || !s.expired(n, now) {
				delete(from, task)
			}
		}
		return false
	}})
	return err == nil && len(res.Bad) == 0 && res.Next.Inode == purpose.Inode
}
