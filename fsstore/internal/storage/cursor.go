package storage

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"aipm/internal/lockedfile"
)

// Cursor is a reader's place in a JSONL file (DESIGN section 4, rule 6):
// see lockedfile.Cursor.
type Cursor = lockedfile.Cursor

// StreamCursor is one stream's entry in an agent's read.json: the committed
// cursor (what the agent has received) and, while a session holds a batch it
// has not acknowledged yet, where that batch ends. Read means received: the
// batch is committed when a later call of the same session proves its
// answer was read (Acknowledge; mcpserver's links.go says what proves it),
// or taken back (Unhand); a session that dies first leaves it pending, and
// the next reader gets it again, marked redelivered.
type StreamCursor struct {
	Cursor
	Pending *PendingBatch `json:"pending,omitempty"`
}

// PendingBatch is a batch handed to a session and not yet acknowledged.
type PendingBatch struct {
	Session string `json:"session"`
	To      Cursor `json:"to"`
	// MessageIDs, in the chat stream, are the messages of the batch: the
	// read receipt names them when the batch is committed.
	MessageIDs []string `json:"messageIds,omitempty"`
	// Shown says the batch was shown to the model, not listed to it (an
	// interrupt in a replaced answer: Store.ShowInterrupt): a listing
	// (get_notifications) on the next call lists it again.
	Shown bool `json:"shown,omitempty"`
}

// Cursors is the content of an agent's read.json: one cursor per stream.
type Cursors map[string]StreamCursor

// Cursor streams: which of an agent's files a cursor reads. Notifications
// have one cursor per session purpose (NotificationStream), so a chat session
// never consumes what only the task session may see; the task purpose's is
// split again by task (TaskNotificationStream), so a session on one task
// never consumes what only a session on another may see.
const (
	StreamChat          = "chat"
	StreamNotifications = "notifications"
)

// NotificationStream is the notifications cursor of a session purpose.
func NotificationStream(purpose string) string { return StreamNotifications + "." + purpose }

// TaskNotificationStream is the notifications cursor of the task sessions
// on task id: what is addressed to that task, and to no other session. It
// is a sub-stream of NotificationStream(PurposeTask) (ReadOptions.SubStream),
// which reads what is addressed to no task.
func TaskNotificationStream(id string) string { return NotificationStream(PurposeTask) + "." + id }

// TaskOfStream is the task a per-task notifications stream is of
// (TaskNotificationStream), "" for any other stream.
func TaskOfStream(stream string) string {
	id, _ := strings.CutPrefix(stream, NotificationStream(PurposeTask)+".")
	if id == stream {
		return ""
	}
	return id
}

// InStreams says whether stream is one of names or a sub-stream of one
// (its name followed by "."): a call that names a session purpose's
// notifications stream names its per-task streams too.
func InStreams(stream string, names []string) bool {
	for _, n := range names {
		if stream == n || strings.HasPrefix(stream, n+".") {
			return true
		}
	}
	return false
}

// StreamPath is the log agent's stream reads: the chat log, or the
// notifications log for any notifications stream.
func (s *Files) StreamPath(agent, stream string) (string, error) {
	switch {
	case stream == StreamChat:
		return s.ChatPath(agent)
	case stream == StreamNotifications || strings.HasPrefix(stream, StreamNotifications+"."):
		return s.NotificationsPath(agent)
	}
	return "", fmt.Errorf("unknown stream %q", stream)
}

// ReadOptions shape one ReadUnread call: how the log is read
// (lockedfile.ReadOptions: Limit, Match, Check, Strict, SkipTo), and what
// the read does with the agent's cursor. Records that Match refuses are
// passed over and the cursor may move past them: they are not for this
// reader (its own outgoing copies, say). SkipTo is taken on a peek only:
// there it starts at that place of the log instead of the cursor when it
// lies past it in the same file, so that the records before it (what a
// session was already told of, its Surfaced mark: Mark.Cursor) are
// neither read nor returned, and a reader of what is new pays for what is
// new, not for the backlog.
type ReadOptions struct {
	lockedfile.ReadOptions
	// Peek returns the records without moving anything.
	Peek bool
	// Session, when set, reads as that session: a peek starts after the
	// batch the session already holds, and a read hands it a batch that is
	// committed only by Acknowledge. Without it a read commits at once.
	Session string
	// ScanKey, on a peek, names what Match selects (the same key must mean
	// the same Match for a given log): a peek remembers how far it passed
	// over records that Match refused (to the first record it returned, or
	// the end), and the next peek from the same cursor starts there, so
	// that a reader passing over many records that are not for it (its own
	// sent copies) pays for them once, not on every peek.
	ScanKey string
	// Advance, on a peek from the committed cursor (no Session) that passed
	// over at least 1 MiB (SetAdvanceAfter) of records Match refused, moves
	// the committed cursor past them, as the next read would, so that the
	// next process does not pass over them again. Only for a Match that
	// every reader of the stream uses.
	Advance bool
	// Via names the call that reads, for the read receipt of the batch
	// the read acknowledges (default "next call").
	Via string
	// Shown, on a read by a Session, marks the batch it hands as shown
	// rather than listed (PendingBatch.Shown).
	Shown bool
	// SubStream, on a read (not a peek), names the sub-stream a record
	// that Match refused belongs to ("" for none): stream + "." + the name.
	// A sub-stream without a cursor starts where this stream's committed
	// cursor is (CursorOf), so a read that moves this cursor past such a
	// record writes the sub-stream's cursor, where this one was, in the
	// same write: the sub-stream's reader still finds the record.
	SubStream func(Record) string
}

// passedOver is how many bytes lie between cursors from and to of one file
// (everything up to to when the file was replaced).
func passedOver(from, to Cursor) int64 {
	if from.Inode != to.Inode {
		return to.Offset
	}
	return to.Offset - from.Offset
}

// advanceCursor moves stream's committed cursor from `from` to `to`, a
// place past records that no reader of the stream wants, if it still is at
// from and no session holds a batch. It is an optimisation: a failure to
// write changes nothing, and the next reader passes over them again.
func (s *Files) advanceCursor(ctx context.Context, cursorPath, stream string, from, to Cursor) {
	to.RedeliverBefore = from.RedeliverBefore
	if to.RedeliverBefore <= to.Offset {
		to.RedeliverBefore = 0
	}
	UpdateDoc(ctx, s, cursorPath, ModeFile, func(cursors *Cursors, _ bool) error {
		sc := CursorOf(*cursors, stream)
		if sc.Pending != nil || !equalCursor(sc.Cursor, from) {
			return ErrNoChange
		}
		if *cursors == nil {
			*cursors = Cursors{}
		}
		sc.Cursor = to
		(*cursors)[stream] = sc
		return nil
	})
}

// peekScan is how far a peek from cursor `from` passed over records it did
// not want: to the first one it wanted, or the end.
type peekScan struct{ from, to Cursor }

// ReadResult is what ReadUnread returns: lockedfile's, whose Next (its
// inode names the file read) is where a Mark of what was seen goes, and
// whose Skipped says a peek started at ReadOptions.SkipTo.
type ReadResult = lockedfile.ReadResult

// ReadCursors reads an agent's read.json; a damaged one is an error that
// says what to do, never "nothing read yet". While one stat says the file
// is the one this process read last (it is replaced by rename: a new
// version is a new inode), what was read then is reused: a copy the
// caller may change.
func (s *Files) ReadCursors(path string) (Cursors, error) {
	stamp, statErr := lockedfile.StampPath(path)
	if statErr == nil {
		if cursors, ok := s.io.cursors.Get(path, stamp); ok {
			return cursors.clone(), nil
		}
	}
	var cursors Cursors
	if err := s.ReadDoc(path, &cursors); err != nil && !errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("the read cursors are damaged (%w): run aipm doctor", err)
	}
	if statErr == nil {
		// Read after the stat: a version written in between is newer than
		// the stamp says, and the next stat misses and reads it again.
		s.io.cursors.Put(path, cursors.clone(), stamp)
	}
	return cursors, nil
}

// clone is a copy of c that shares nothing with it.
func (c Cursors) clone() Cursors {
	if c == nil {
		return nil
	}
	out := make(Cursors, len(c))
	for stream, sc := range c {
		sc.Earlier = slices.Clone(sc.Earlier)
		if sc.Pending != nil {
			p := *sc.Pending
			p.To.Earlier = slices.Clone(p.To.Earlier)
			p.MessageIDs = slices.Clone(p.MessageIDs)
			sc.Pending = &p
		}
		out[stream] = sc
	}
	return out
}

// CursorOf is cursors[stream]; a notifications cursor not written yet
// starts where its parent's committed cursor is: a per-purpose one where the
// older shared one was, a per-task one where its purpose's is (a read of
// the parent that passes over one of its records writes it first:
// ReadOptions.SubStream).
func CursorOf(cursors Cursors, stream string) StreamCursor {
	if sc, ok := cursors[stream]; ok {
		return sc
	}
	if !strings.HasPrefix(stream, StreamNotifications+".") {
		return StreamCursor{}
	}
	parent := stream[:strings.LastIndexByte(stream, '.')]
	return StreamCursor{Cursor: CursorOf(cursors, parent).Cursor}
}

// StartFor is where session reads from: after its own pending batch, or at
// the committed cursor, with another session's unacknowledged batch marked
// for redelivery.
func StartFor(sc StreamCursor, session string) Cursor {
	cur := sc.Cursor
	p := sc.Pending
	if p == nil {
		return cur
	}
	if session != "" && p.Session == session {
		return p.To
	}
	if (cur.Inode == 0 || p.To.Inode == cur.Inode) && p.To.Offset > cur.RedeliverBefore {
		cur.RedeliverBefore = p.To.Offset
	}
	return cur
}

// ReadUnread returns what is past the agent's cursor for stream, oldest
// first. Unless Peek, it moves the cursor exactly past the last record
// returned (at once, or on Acknowledge when opt.Session is set), under the
// agent directory's lock, so concurrent readers of one cursor never get a
// record twice. Its cost is proportional to what is new.
func (s *Files) ReadUnread(ctx context.Context, agent, stream string, opt ReadOptions) (ReadResult, error) {
	logPath, err := s.StreamPath(agent, stream)
	if err != nil {
		return ReadResult{}, err
	}
	cursorPath, err := s.ReadCursorPath(agent)
	if err != nil {
		return ReadResult{}, err
	}
	if opt.Peek {
		return s.peekUnread(ctx, logPath, cursorPath, stream, opt)
	}
	var res ReadResult
	var read []string // the previous batch, which a read by its session commits
	read1, subs := opt.withSubStreams()
	_, err = UpdateDoc(ctx, s, cursorPath, ModeFile, func(cursors *Cursors, _ bool) error {
		if *cursors == nil {
			*cursors = Cursors{}
		}
		sc := CursorOf(*cursors, stream)
		read, *subs = nil, nil
		if sc.Pending != nil && opt.Session != "" && sc.Pending.Session == opt.Session {
			read = sc.Pending.MessageIDs
		}
		start := StartFor(sc, opt.Session)
		var next Cursor
		var err error
		if res, next, err = s.readPast(logPath, start, read1); err != nil {
			return err
		}
		after, changed := advanced(sc, start, next, opt.Session, len(res.Records) > 0)
		if keepSubStreams(*cursors, stream, sc.Cursor, *subs) {
			changed = true
		}
		if !changed {
			return ErrNoChange // nothing handed out or moved: nothing to remember
		}
		if stream == StreamChat && after.Pending != nil && len(res.Records) > 0 {
			after.Pending.MessageIDs = RecordIDs(res.Records)
		}
		if after.Pending != nil && len(res.Records) > 0 {
			after.Pending.Shown = opt.Shown
		}
		(*cursors)[stream] = after
		return nil
	})
	if le := (*LineError)(nil); errors.As(err, &le) && le.Path == s.Rel(cursorPath) {
		return res, fmt.Errorf("the read cursors are damaged (%w): run aipm doctor", err)
	}
	if err == nil {
		s.WriteReceipt(ctx, agent, ReceiptRead, opt.Session, cmp.Or(opt.Via, viaNextCall), read)
	}
	return res, err
}

// readPast reads logPath past cur as opt says, with bad lines named by
// their path in the project. It returns the records (and res.First, the
// cursor just before the first one returned) and next, the cursor after
// the last one: cur when the read fails.
func (s *Files) readPast(logPath string, cur Cursor, opt ReadOptions) (res ReadResult, next Cursor, err error) {
	read := opt.ReadOptions
	if !opt.Peek {
		read.SkipTo = Cursor{} // only a peek starts past the cursor
	}
	res, err = lockedfile.ReadPast(logPath, cur, read)
	for _, le := range res.Bad {
		le.Path = s.Rel(logPath)
	}
	var le *LineError
	switch {
	case errors.As(err, &le):
		le.Path = s.Rel(logPath)
		return res, cur, err
	case err != nil:
		return res, cur, s.Failed("read", logPath, err)
	}
	return res, res.Next, nil
}

// withSubStreams is opt with a Match that also notes, in subs, the
// sub-streams (SubStream) of the records it refuses: the read that passes
// over them writes their cursors (keepSubStreams).
func (opt ReadOptions) withSubStreams() (ReadOptions, *[]string) {
	subs := new([]string)
	if opt.SubStream == nil {
		return opt, subs
	}
	match := opt.Match
	opt.Match = func(r Record) bool {
		if match == nil || match(r) {
			return true
		}
		if sub := opt.SubStream(r); sub != "" && !slices.Contains(*subs, sub) {
			*subs = append(*subs, sub)
		}
		return false
	}
	return opt, subs
}

// keepSubStreams writes, for each of stream's sub-streams subs without a
// cursor, the cursor it starts at until now (CursorOf: committed, its
// parent's committed cursor), before the parent moves past their records.
// It says whether it wrote any.
func keepSubStreams(cursors Cursors, stream string, committed Cursor, subs []string) bool {
	wrote := false
	for _, sub := range subs {
		if _, ok := cursors[stream+"."+sub]; !ok {
			cursors[stream+"."+sub] = StreamCursor{Cursor: committed}
			wrote = true
		}
	}
	return wrote
}

// peekUnread is ReadUnread with Peek: it moves nothing (but for Advance),
// so it needs no lock. With a ScanKey it starts where the previous peek of
// the same reader found nothing for it.
func (s *Files) peekUnread(ctx context.Context, logPath, cursorPath, stream string, opt ReadOptions) (ReadResult, error) {
	if _, err := os.Stat(logPath); errors.Is(err, os.ErrNotExist) {
		return ReadResult{}, nil // nothing written yet: the common case for notifications
	}
	cursors, err := s.ReadCursors(cursorPath)
	if err != nil {
		return ReadResult{}, err
	}
	start := StartFor(CursorOf(cursors, stream), opt.Session)
	from, key := start, ""
	if opt.ScanKey != "" {
		key = logPath + "\x00" + stream + "\x00" + opt.Session + "\x00" + opt.ScanKey
		if scan, ok := s.io.peeks.Get(key); ok && equalCursor(scan.from, start) {
			from = scan.to
			from.RedeliverBefore = start.RedeliverBefore
		}
	}
	res, next, err := s.readPast(logPath, from, opt)
	if res.Skipped {
		key = "" // what lies before the mark was not looked at: nothing to remember
	}
	if err != nil || len(res.Bad) > 0 {
		return res, err
	}
	// Nothing for this reader lies between start and the first record
	// found (or the end): the next peek starts there.
	to := next
	if len(res.Records) > 0 {
		to = res.First
	}
	if key != "" {
		s.io.peeks.Put(key, peekScan{from: start, to: to})
	}
	if opt.Advance && opt.Session == "" && passedOver(start, to) >= s.seams.advanceAfter {
		s.advanceCursor(ctx, cursorPath, stream, start, to)
	}
	return res, nil
}

// advanced is sc after a read by session (none: a reader that commits at
// once) from start to next that handed out records or not, and whether it
// changed.
func advanced(sc StreamCursor, start, next Cursor, session string, handed bool) (StreamCursor, bool) {
	before := sc
	if sc.Pending != nil && sc.Pending.Session != session {
		// Another session's batch was never acknowledged: remember, in the
		// committed cursor, that it went out, whoever reads it next.
		sc.RedeliverBefore = start.RedeliverBefore
	}
	switch {
	case session == "":
		sc.Cursor = next
		if sc.Pending != nil && sc.Pending.To.Inode == next.Inode && sc.Pending.To.Offset <= next.Offset {
			sc.Pending = nil // what that session held is past the cursor now
		}
	case handed:
		if sc.Pending != nil && sc.Pending.Session == session {
			sc.Cursor = sc.Pending.To // this call acknowledges the session's previous batch
		}
		sc.Pending = &PendingBatch{Session: session, To: next}
	case sc.Pending != nil && sc.Pending.Session == session:
		sc.Cursor, sc.Pending = sc.Pending.To, nil // nothing new; the previous batch is acknowledged
	default:
		return sc, false // nothing handed out: nothing to remember
	}
	return sc, !EqualStream(sc, before)
}

// EqualStream says whether a and b are the same place with the same
// pending batch (its session and end).
func EqualStream(a, b StreamCursor) bool {
	if !equalCursor(a.Cursor, b.Cursor) || (a.Pending == nil) != (b.Pending == nil) {
		return false
	}
	return a.Pending == nil || a.Pending.Session == b.Pending.Session && equalCursor(a.Pending.To, b.Pending.To)
}

func equalCursor(a, b Cursor) bool {
	return a.Offset == b.Offset && a.Line == b.Line && a.Inode == b.Inode && a.LastID == b.LastID &&
		a.RedeliverBefore == b.RedeliverBefore && strings.Join(a.Earlier, "\n") == strings.Join(b.Earlier, "\n")
}

// viaNextCall is how a read receipt names an acknowledgement whose call
// is not known.
const viaNextCall = "next call"

// Acknowledge commits every batch handed to session in agent's streams but
// those in except (and their sub-streams: InStreams): a later call of the
// session proved it received them. It reads read.json without a lock and writes only when
// there is a batch. A call that is itself a read of a stream leaves that
// stream out: the read acknowledges the previous batch in its own write.
func (s *Files) Acknowledge(ctx context.Context, agent, session string, except ...string) error {
	return s.acknowledgeVia(ctx, agent, session, viaNextCall, except...)
}

// acknowledgeVia is Acknowledge by the call via (a tool's name: the read
// receipt says which call read the messages, respond_chat or mark_read,
// say).
func (s *Files) acknowledgeVia(ctx context.Context, agent, session, via string, except ...string) error {
	_, _, err := s.AcknowledgeWhere(ctx, agent, session, via, func(stream string, _ *PendingBatch) bool { return !InStreams(stream, except) })
	return err
}

// AcknowledgeCall is AcknowledgeVia for a call that proved the answer
// before it was read (mcpserver/links.go). A batch only shown to the model
// (an interrupt in a replaced answer or a client hook: PendingBatch.Shown)
// is read only by a call that lets the session comply with it (complies:
// the tools that pass an interrupt); any other call keeps it, so that the
// interrupt in it still stops the session. kept says such a batch is still
// held.
func (s *Files) AcknowledgeCall(ctx context.Context, agent, session, via string, complies bool, except ...string) (kept bool, err error) {
	_, kept, err = s.AcknowledgeWhere(ctx, agent, session, via, func(stream string, p *PendingBatch) bool {
		return !InStreams(stream, except) && (complies || !p.Shown)
	})
	return kept, err
}

// AcknowledgeShown commits the batches of session that were only shown
// (an interrupt a client hook showed whole) but those in except: the call
// via complies with it. A call that is itself a read of a stream leaves
// that stream out: it lists the batch again, and reads it in its own write.
func (s *Files) AcknowledgeShown(ctx context.Context, agent, session, via string, except ...string) error {
	_, _, err := s.AcknowledgeWhere(ctx, agent, session, via, func(stream string, p *PendingBatch) bool { return p.Shown && !InStreams(stream, except) })
	return err
}

// AcknowledgeWhere commits the batches handed to session in agent's streams
// that `in` accepts (it sees each stream's batch), and returns the chat
// messages it committed; kept says the session still holds a batch only
// shown (PendingBatch.Shown) that `in` left.
func (s *Files) AcknowledgeWhere(ctx context.Context, agent, session, via string, in func(stream string, p *PendingBatch) bool) (_ []string, kept bool, _ error) {
	cursorPath, err := s.ReadCursorPath(agent)
	if err != nil {
		return nil, false, err
	}
	cursors, err := s.ReadCursors(cursorPath)
	if err != nil {
		return nil, false, err
	}
	kept = HoldsBatchIn(cursors, session, func(stream string, p *PendingBatch) bool { return p.Shown && !in(stream, p) })
	if !HoldsBatchIn(cursors, session, in) {
		return nil, kept, nil
	}
	var read []string // the chat messages the session received
	_, err = UpdateDoc(ctx, s, cursorPath, ModeFile, func(cursors *Cursors, _ bool) error {
		if !HoldsBatchIn(*cursors, session, in) {
			return ErrNoChange
		}
		read = nil
		for stream, sc := range *cursors {
			if sc.Pending != nil && sc.Pending.Session == session && in(stream, sc.Pending) {
				if stream == StreamChat {
					read = sc.Pending.MessageIDs
				}
				sc.Cursor, sc.Pending = sc.Pending.To, nil
				(*cursors)[stream] = sc
			}
		}
		return nil
	})
	if err != nil {
		return nil, kept, fmt.Errorf("acknowledge what session %s received: %w", session, err)
	}
	s.WriteReceipt(ctx, agent, ReceiptRead, session, via, read)
	return read, kept, nil
}

// RecordIDs are the ids of recs (JSON objects with an id: ReadPast's rule).
func RecordIDs(recs []Record) []string {
	ids := make([]string, 0, len(recs))
	for _, r := range recs {
		ids = append(ids, gjson.GetBytes(r.Data, "id").String())
	}
	return ids
}

// HoldsBatchIn says whether session holds a batch that `in` accepts.
func HoldsBatchIn(cursors Cursors, session string, in func(stream string, p *PendingBatch) bool) bool {
	for stream, sc := range cursors {
		if sc.Pending != nil && sc.Pending.Session == session && in(stream, sc.Pending) {
			return true
		}
	}
	return false
}

// Mark is a place in one of an agent's logs: the records that start before
// it, in the file it was measured in, have been told to a session's model.
// A file replaced since (a doctor repair) starts again from nothing: its
// records may be told once more, never lost.
type Mark struct {
	Inode  uint64 `json:"inode"`
	Offset int64  `json:"offset"`
	// Line is the number of lines before Offset: a reader that starts at
	// the mark names the lines after it rightly (served texts' path:line).
	Line int `json:"line,omitempty"`
	// ID is the id of the record that ends at Offset: a reader starts at the
	// mark only when that record is still there (ReadOptions.SkipTo), not
	// in a file that merely reuses the inode number.
	ID string `json:"id,omitempty"`
}

// Cursor is the place m marks as a reader's cursor: where a peek that
// skips what was told starts (ReadOptions.SkipTo).
func (m Mark) Cursor() Cursor {
	return Cursor{Offset: m.Offset, Line: m.Line, Inode: m.Inode, LastID: m.ID}
}

// Covers says whether the record starting at offset of the file with
// inode lies before m.
func (m Mark) Covers(inode uint64, offset int64) bool {
	return m.Inode == inode && offset < m.Offset
}
