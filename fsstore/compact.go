package fsstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"aipm/fsstore/internal/storage"
	"aipm/internal/lockedfile"
)

// The logs compaction shortens, each with its retention and the read.json
// streams that read it (none: no reader keeps a place in it).
const (
	chatLog          = "chat.jsonl"
	notificationsLog = "notifications.jsonl"
	receiptsLog      = "receipts.jsonl"
)

// compactLockPath is held by the compaction that runs: one at a time.

// compaction is agents/<agent>/compacted.json.
type compaction struct {
	// ChatThrough: every line compaction dropped from the agent's chat.jsonl
	// was created at or before it (a horizon: a message older than it may
	// be missing from this file on purpose).
	ChatThrough time.Time `json:"chatThrough,omitzero"`
	// At is when compaction last dropped lines from the chat log.
	At time.Time `json:"at,omitzero"`
}

// CompactOptions shape one Store.Compact.
type CompactOptions struct {
	// DryRun says what would be dropped, and drops nothing.
	DryRun bool
	// Wait waits for a compaction that runs (as long as ctx allows)
	// instead of skipping.
	Wait bool
}

// CompactResult is what one Store.Compact did.
type CompactResult struct {
	// Skipped says another compaction was running: nothing was done.
	Skipped bool            `json:"skipped,omitempty"`
	Files   []CompactedFile `json:"files"`
	// Restored counts the missing copies of group messages (a send
	// killed midway) written before cutting, as doctor --repair writes
	// them.
	Restored int `json:"restored,omitempty"`
}

// CompactedFile is one log's compaction (or, on a dry run, what it would be).
type CompactedFile struct {
	Path         string `json:"path"`
	DroppedLines int    `json:"droppedLines"`
	DroppedBytes int64  `json:"droppedBytes"`
	KeptBytes    int64  `json:"keptBytes"`
	// Unread says the retention would have dropped more, but lines a
	// reader has not consumed (or unread notifications that have not
	// expired) are kept.
	Unread bool `json:"unread,omitempty"`
}

// logRetention is one log of an agent as compaction sees it.
type logRetention struct {
	name   string
	retain int
	// stream says which read.json streams read it.
	stream func(key string) bool
}

func logRetentions(c *storage.Config) []logRetention {
	r := c.Retention()
	return []logRetention{
		{chatLog, r.ChatLines, func(k string) bool { return k == storage.StreamChat }},
		{notificationsLog, r.NotificationLines, func(k string) bool {
			return k == storage.StreamNotifications || strings.HasPrefix(k, storage.StreamNotifications+".")
		}},
		{receiptsLog, r.ReceiptLines, nil},
	}
}

// Compact shortens every agent's chat, notifications and receipts logs to
// the config's retention (the newest lines), keeping every line a reader
// has not consumed: nothing at or past a read cursor (committed or handed
// out in a batch), the line each cursor remembers as its last id (so that
// a cursor still on the old file finds its place by id), and every unread
// notification that has not expired. What is dropped is gone (docs/files.md).
// One compaction runs at a time: another one waits (opt.Wait) or skips.
// Each log is replaced under its flock and its agent directory's lock
// (DropPrefix), and the cursors and the sessions' marks into it are moved
// to the new file; a cursor or mark left on the old one finds its place by
// id, as after any replacement.
func (s *Store) Compact(ctx context.Context, cfg *storage.Config, opt CompactOptions) (CompactResult, error) {
	var res CompactResult
	unlock, ok, err := s.compactLock(ctx, opt.Wait)
	if err != nil || !ok {
		res.Skipped = !ok
		return res, err
	}
	defer unlock()
	entries, err := os.ReadDir(s.files.AgentsDir())
	if errors.Is(err, os.ErrNotExist) {
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("compact: %w", s.files.Failed("read", s.files.AgentsDir(), err))
	}
	var errs []error
	if !opt.DryRun {
		restored, err := s.rollGroupsForward(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("compact: complete killed group sends first: %w", err))
		}
		for _, p := range restored {
			if p.Repaired {
				res.Restored++
			}
		}
	}
	for _, e := range entries {
		if !e.IsDir() || storage.CheckAgentID(e.Name()) != nil {
			continue
		}
		dir := filepath.Join(s.files.AgentsDir(), e.Name())
		if err := lockedfile.RemoveStaleCompactions(dir); err != nil {
			errs = append(errs, fmt.Errorf("compact: %w", s.files.Failed("clean", dir, err)))
		}
		for _, lr := range logRetentions(cfg) {
			f, err := s.compactLog(ctx, e.Name(), lr, opt.DryRun)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if f.DroppedBytes > 0 || f.Unread {
				res.Files = append(res.Files, f)
			}
		}
		if !opt.DryRun {
			if err := s.pruneTaskCursors(ctx, e.Name()); err != nil {
				errs = append(errs, fmt.Errorf("compact: forget the task cursors of %s that hold nothing: %w", e.Name(), err))
			}
		}
	}
	return res, errors.Join(errs...)
}

// compactLock takes the compaction lock, waiting for it or not.
func (s *Store) compactLock(ctx context.Context, wait bool) (unlock func(), ok bool, err error) {
	path := s.files.CompactLockPath()
	if wait {
		unlock, err = lockedfile.Lock(ctx, path, storage.ModePrivateFile)
		ok = err == nil
	} else {
		unlock, ok, err = lockedfile.TryLock(path, storage.ModePrivateFile)
	}
	if err != nil {
		return nil, false, fmt.Errorf("compact: %w", s.files.Failed("lock", path, err))
	}
	return unlock, ok, nil
}

// compactPlan is what planning one log found.
type compactPlan struct {
	lines   int       // complete lines before the cut
	through time.Time // the newest createdAt before the cut (chat)
	unread  bool      // the retention alone would cut further
	trusted map[string]bool
	// unreadIDs (receipts) are the messages the agent has not read: their
	// receipts stay, so that what was surfaced and not read is still known.
	unreadIDs map[string]bool
}

// compactLog compacts one log of agent, holding the agent directory's
// lock (read.json cannot move) from the plan to the cursors' translation.
func (s *Store) compactLog(ctx context.Context, agent string, lr logRetention, dry bool) (CompactedFile, error) {
	dir, err := s.files.AgentDir(agent)
	if err != nil {
		return CompactedFile{}, err
	}
	path := filepath.Join(dir, lr.name)
	out := CompactedFile{Path: s.files.Rel(path)}
	held, err := s.files.LockDir(ctx, dir)
	if err != nil {
		return out, err
	}
	unlock := sync.OnceFunc(held)
	defer unlock()
	cursorPath, _ := s.files.ReadCursorPath(agent)
	var cursors storage.Cursors
	if lr.stream != nil {
		if cursors, err = s.files.ReadCursors(cursorPath); err != nil {
			return out, fmt.Errorf("compact %s: %w", out.Path, err)
		}
	}
	plan := compactPlan{trusted: map[string]bool{}}
	if lr.name == receiptsLog {
		if plan.unreadIDs, err = s.unreadMessageIDs(ctx, agent); err != nil {
			return out, fmt.Errorf("compact %s: %w", out.Path, err)
		}
	}
	d, err := lockedfile.DropPrefix(ctx, path, lockedfile.DropOptions{Durable: s.files.Durable.Load(), DryRun: dry},
		func(f *os.File, size int64, inode uint64) (int64, error) {
			return s.planCut(f, path, size, inode, lr, cursors, &plan)
		},
		func(d lockedfile.Dropped) error {
			if lr.name != chatLog {
				return nil
			}
			return s.recordHorizon(ctx, agent, plan.through)
		})
	if err != nil {
		return out, fmt.Errorf("compact %s: %w", out.Path, err)
	}
	out.DroppedLines, out.DroppedBytes, out.KeptBytes, out.Unread = plan.lines, d.Cut, d.Size-d.Cut, plan.unread
	if d.New == 0 || lr.stream == nil {
		return out, nil
	}
	// An optimisation: a cursor left on the old inode finds its place by id.
	if err := s.translateCursors(ctx, cursorPath, lr, d, plan); err != nil {
		return out, fmt.Errorf("compact %s: the log is compacted; its cursors will find their place by id: %w", out.Path, err)
	}
	unlock()
	s.translateMarks(ctx, agent, lr.name, d, plan.lines)
	return out, nil
}

// planCut is where the log at path (locked, of size bytes) may be cut:
// before its newest lr.retain lines, and before nothing a reader still
// needs (see Compact). It fills plan.
func (s *Store) planCut(f *os.File, path string, size int64, inode uint64, lr logRetention, cursors storage.Cursors, plan *compactPlan) (int64, error) {
	cut, err := lockedfile.NewestLinesStart(f, size, lr.retain)
	if err != nil || cut == 0 {
		return 0, err
	}
	retained := cut
	if lr.stream != nil {
		if cut, err = s.cursorsCut(f, path, size, inode, lr, cursors, cut, plan); err != nil {
			return 0, err
		}
	}
	if cut > 0 && lr.name == notificationsLog {
		if cut, err = s.unreadNotificationsCut(f, path, size, inode, cursors, cut); err != nil {
			return 0, err
		}
	}
	if cut > 0 && len(plan.unreadIDs) > 0 {
		if cut, err = unreadReceiptsCut(f, path, cut, plan.unreadIDs); err != nil {
			return 0, err
		}
	}
	plan.unread = cut < retained
	if cut > 0 {
		plan.lines, plan.through, err = scanDropped(f, path, cut, lr.name == chatLog)
	}
	return cut, err
}

// cursorsCut lowers cut to the start of the line each of the log's cursors
// last consumed (0 for a cursor that lost its place; a chat log without a
// cursor, never read, to its first received message), and notes the cursors whose offset
// was trusted as it is (those translateCursors moves).
func (s *Store) cursorsCut(f *os.File, path string, size int64, inode uint64, lr logRetention, cursors storage.Cursors, cut int64, plan *compactPlan) (int64, error) {
	if _, ok := cursors[storage.StreamChat]; !ok && lr.name == chatLog {
		return firstInbound(f, path, cut)
	}
	own := map[string]int64{} // a per-task notifications cursor's task -> its place
	for key, sc := range cursors {
		if !lr.stream(key) {
			continue
		}
		if task := storage.TaskOfStream(key); task != "" {
			pos, trusted, lost, err := lockedfile.Resolve(f, path, inode, size, sc.Cursor)
			if err != nil || lost {
				return 0, err
			}
			plan.trusted[key], own[task] = trusted, pos
			if sc.Pending != nil { // its batch is of its task's records, past its place
				if _, trusted, lost, err = lockedfile.Resolve(f, path, inode, size, sc.Pending.To); err != nil || lost {
					return 0, err
				}
				plan.trusted[key+"\x00pending"] = trusted
			}
			continue
		}
		places := map[string]storage.Cursor{key: sc.Cursor}
		if sc.Pending != nil {
			places[key+"\x00pending"] = sc.Pending.To
		}
		for name, c := range places {
			pos, trusted, lost, err := lockedfile.Resolve(f, path, inode, size, c)
			if err != nil {
				return 0, err
			}
			if lost {
				return 0, nil
			}
			plan.trusted[name] = trusted
			start, err := lockedfile.LineStart(f, pos)
			if err != nil {
				return 0, err
			}
			cut = min(cut, start)
		}
	}
	return taskCursorsCut(f, path, own, cut)
}

// taskCursorsCut lowers cut to the first notification, at or past a
// per-task notifications cursor's place (own: task -> place), addressed to
// that cursor's task: a per-task cursor keeps what is its own, and pins
// nothing else (one of a task no session works on any more would keep the
// whole log). translateCursors moves one whose place is cut to the start
// of the new file: nothing of its task lay between. A line not understood
// is kept for doctor, with what follows.
func taskCursorsCut(f *os.File, path string, own map[string]int64, cut int64) (int64, error) {
	from := cut
	for _, pos := range own {
		from = min(from, pos)
	}
	if from >= cut {
		return cut, nil
	}
	return firstKept(f, path, from, cut, func(rec storage.Record) bool {
		pos, ok := own[gjson.GetBytes(rec.Data, "taskId").Str]
		return ok && rec.Offset >= pos
	})
}

// firstInbound lowers cut to the first message before it that the
// agent received (not its own sent copy): a chat log without a cursor was
// never read, and only what others sent is for a reader.
func firstInbound(f *os.File, path string, cut int64) (int64, error) {
	agent := filepath.Base(filepath.Dir(path))
	return firstKept(f, path, 0, cut, func(rec storage.Record) bool {
		return gjson.GetBytes(rec.Data, "senderId").String() != agent
	})
}

// firstKept lowers cut to the first line from offset from on that keep
// wants, or that is not understood (kept for doctor, with what follows).
func firstKept(f *os.File, path string, from, cut int64, keep func(storage.Record) bool) (int64, error) {
	r, err := lockedfile.NewLineReader(f, path, lockedfile.Position{Offset: from})
	if err != nil {
		return 0, err
	}
	for {
		before := r.Pos().Offset
		rec, err := r.Next()
		var le *storage.LineError
		switch {
		case errors.Is(err, io.EOF):
			return cut, nil
		case errors.As(err, &le):
			return min(cut, before), nil
		case err != nil:
			return 0, err
		}
		if rec.Offset >= cut {
			return cut, nil
		}
		if keep(rec) {
			return rec.Offset, nil
		}
	}
}

// unreadNotificationsCut lowers cut to the first notification before it
// that is unread (as aipm status counts: one about a task until a task
// session read it, any other until some session did) and has not expired.
// Only a session purpose without a cursor can leave one there: the cut is
// before every cursor already.
func (s *Store) unreadNotificationsCut(f *os.File, path string, size int64, inode uint64, cursors storage.Cursors, cut int64) (int64, error) {
	has := map[string]bool{}
	for _, p := range []string{storage.PurposeTask, storage.PurposeChat} {
		sc := storage.CursorOf(cursors, storage.NotificationStream(p))
		has[p] = sc.Offset > 0 || sc.LastID != ""
	}
	if has[storage.PurposeTask] && has[storage.PurposeChat] {
		return cut, nil
	}
	now := time.Now()
	return firstKept(f, path, 0, cut, func(rec storage.Record) bool {
		n, err := decodeNotification(rec)
		switch {
		case err != nil:
			return true // not understood: kept for doctor
		case s.expired(n, now):
			return false // no session is given it
		}
		return !has[storage.PurposeTask] && (n.TaskID != "" || !has[storage.PurposeChat])
	})
}

// unreadMessageIDs are the messages others sent to agent that it has not
// read (past its committed chat cursor).
func (s *Store) unreadMessageIDs(ctx context.Context, agent string) (map[string]bool, error) {
	res, err := s.files.ReadUnread(ctx, agent, storage.StreamChat, storage.ReadOptions{ReadOptions: lockedfile.ReadOptions{Match: fromOthers(agent)}, Peek: true})
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for _, id := range storage.RecordIDs(res.Records) {
		ids[id] = true
	}
	return ids, nil
}

// unreadReceiptsCut lowers cut to the first receipt before it that names
// a message in unread: what a message still waiting went through (surfaced
// by a hook, say) is kept while it waits (aipm status, aipm log).
func unreadReceiptsCut(f *os.File, path string, cut int64, unread map[string]bool) (int64, error) {
	return firstKept(f, path, 0, cut, func(rec storage.Record) bool {
		for _, id := range gjson.GetBytes(rec.Data, "messageIds").Array() {
			if unread[id.Str] {
				return true
			}
		}
		return false
	})
}

// scanDropped counts the complete lines before cut and, for a chat log,
// finds the newest createdAt among them.
func scanDropped(f *os.File, path string, cut int64, chat bool) (lines int, through time.Time, err error) {
	buf := make([]byte, 64<<10)
	sr := io.NewSectionReader(f, 0, cut)
	for {
		n, err := sr.Read(buf)
		lines += bytes.Count(buf[:n], []byte{'\n'})
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, through, fmt.Errorf("read %s: %w", path, err)
		}
	}
	if !chat {
		return lines, through, nil
	}
	r, err := lockedfile.NewLineReader(f, path, lockedfile.Position{})
	if err != nil {
		return 0, through, err
	}
	for {
		rec, err := r.Next()
		var le *storage.LineError
		switch {
		case errors.Is(err, io.EOF):
			return lines, through, nil
		case errors.As(err, &le):
			continue
		case err != nil:
			return 0, through, err
		}
		if rec.Offset >= cut {
			return lines, through, nil
		}
		if t, err := time.Parse(time.RFC3339Nano, gjson.GetBytes(rec.Data, "createdAt").String()); err == nil && t.After(through) {
			through = t
		}
	}
}

// recordHorizon raises agent's chat horizon to through (never lowers it),
// before the lines are dropped: a compaction killed after it dropped
// nothing, and doctor only skips checks of lines that are still there.
// The caller holds the agent directory's lock.
func (s *Store) recordHorizon(ctx context.Context, agent string, through time.Time) error {
	path, err := s.files.CompactionPath(agent)
	if err != nil {
		return err
	}
	_, err = storage.UpdateDocHeld(ctx, s.files, path, storage.ModeFile, func(c *compaction, _ bool) error {
		if through.After(c.ChatThrough) {
			c.ChatThrough = through.UTC()
		}
		c.At = time.Now().UTC()
		return nil
	})
	return err
}

// compactedAway says whether message m may be missing from agent's chat
// log because compaction dropped it: it is not newer than the log's
// horizon. Doctor's mirror check restores no such copy.
func (s *Store) compactedAway(agent string, m Message) bool {
	path, err := s.files.CompactionPath(agent)
	if err != nil {
		return false
	}
	var c compaction
	if err := s.files.ReadDoc(path, &c); err != nil || c.ChatThrough.IsZero() {
		return false
	}
	t, err := time.Parse(time.RFC3339Nano, m.CreatedAt)
	return err == nil && !t.After(c.ChatThrough)
}

// translateCursors moves the log's cursors (and batches) that were
// trusted on the old inode to the same records in the new one. The caller
// holds the agent directory's lock, so they are those planCut saw.
func (s *Store) translateCursors(ctx context.Context, cursorPath string, lr logRetention, d lockedfile.Dropped, plan compactPlan) error {
	shift := func(c storage.Cursor, trusted bool) storage.Cursor {
		if !trusted || c.Inode != d.Old || c.Offset < d.Cut {
			return c
		}
		c.Inode, c.Offset, c.Line = d.New, c.Offset-d.Cut, max(0, c.Line-plan.lines)
		if c.RedeliverBefore > 0 {
			c.RedeliverBefore = max(0, c.RedeliverBefore-d.Cut)
		}
		return c
	}
	_, err := storage.UpdateDocHeld(ctx, s.files, cursorPath, storage.ModeFile, func(cursors *storage.Cursors, exists bool) error {
		if !exists {
			return storage.ErrNoChange
		}
		for key, sc := range *cursors {
			if !lr.stream(key) {
				continue
			}
			if storage.TaskOfStream(key) != "" && plan.trusted[key] && sc.Inode == d.Old && sc.Offset < d.Cut {
				// Nothing of its task lay between its place and the cut
				// (taskCursorsCut): it starts the new file.
				sc.Cursor = storage.Cursor{Inode: d.New, RedeliverBefore: max(0, sc.RedeliverBefore-d.Cut)}
			}
			sc.Cursor = shift(sc.Cursor, plan.trusted[key])
			if sc.Pending != nil {
				p := *sc.Pending
				p.To = shift(p.To, plan.trusted[key+"\x00pending"])
				sc.Pending = &p
			}
			(*cursors)[key] = sc
		}
		return nil
	})
	return err
}

// translateMarks moves the agent's sessions' marks into the compacted log
// to the new inode, best effort: a mark left on the old one starts again
// from nothing (a notice may be told twice, never lost).
func (s *Store) translateMarks(ctx context.Context, agent, log string, d lockedfile.Dropped, lines int) {
	if log == receiptsLog {
		return
	}
	ids, err := s.agentSessionIDs(agent)
	if err != nil {
		return
	}
	for _, id := range ids {
		path, err := s.toldPath(id)
		if err != nil {
			continue
		}
		lockedfile.SwapRecord(ctx, path, storage.ModePrivateFile, false, func(old []byte) ([]byte, error) { // none: told nothing yet
			t := decodeTold(old)
			m := &t.Notifications
			if log == chatLog {
				m = &t.Chat
			}
			if m.Inode != d.Old {
				return old, nil
			}
			m.Inode, m.Offset, m.Line = d.New, max(0, m.Offset-d.Cut), max(0, m.Line-lines)
			return json.Marshal(t)
		})
	}
}
