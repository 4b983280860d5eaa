package fsstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/tidwall/gjson"
)

// Cursor is a reader's place in a JSONL file (DESIGN section 4, rule 6): the
// position after the last record it consumed, the inode it was measured in,
// and that record's id. If the file is replaced (new inode) or truncated
// (offset past the end), the position is found again by LastID.
type Cursor struct {
	Offset int64  `json:"offset"`
	Line   int    `json:"line"`
	Inode  uint64 `json:"inode"`
	LastID string `json:"lastId,omitempty"`
}

// Cursors is the content of an agent's read.json: one cursor per stream.
type Cursors map[string]Cursor

// Cursor streams: which of an agent's files a cursor reads.
const (
	StreamChat          = "chat"
	StreamNotifications = "notifications"
)

func (s *Store) streamPath(agent, stream string) (string, error) {
	switch stream {
	case StreamChat:
		return s.ChatPath(agent)
	case StreamNotifications:
		return s.NotificationsPath(agent)
	}
	return "", fmt.Errorf("unknown stream %q", stream)
}

// ReadOptions shape one ReadUnread call.
type ReadOptions struct {
	// Limit is the most records returned; 0 means no limit.
	Limit int
	// Match selects the records the reader wants (nil: all). Records that do
	// not match are passed over and the cursor may move past them: they are
	// not for this reader (its own outgoing copies, say).
	Match func(Record) bool
	// Peek returns the records without moving the cursor.
	Peek bool
}

// ReadResult is what ReadUnread returns.
type ReadResult struct {
	Records []Record
	// More says at least one more matching record is past the last one returned.
	More bool
	// Bad lists invalid complete lines that were passed over.
	Bad []*LineError
}

// ReadUnread returns what is past the agent's cursor for stream, oldest first,
// and (unless Peek) advances the cursor exactly past the last record returned,
// all under the agent directory's lock, so concurrent readers of one cursor
// never get a record twice. Its cost is proportional to what is new.
func (s *Store) ReadUnread(ctx context.Context, agent, stream string, opt ReadOptions) (ReadResult, error) {
	var res ReadResult
	logPath, err := s.streamPath(agent, stream)
	if err != nil {
		return res, err
	}
	cursorPath, err := s.ReadCursorPath(agent)
	if err != nil {
		return res, err
	}
	if opt.Peek { // moves nothing, so needs no lock
		if _, err := os.Stat(logPath); errors.Is(err, os.ErrNotExist) {
			return res, nil // nothing written yet: the common case for notifications
		}
		var cursors Cursors
		if err := s.ReadDoc(cursorPath, &cursors); err != nil && !errors.Is(err, ErrNotFound) {
			return res, err
		}
		_, err := s.readPast(logPath, cursors[stream], opt, &res)
		return res, err
	}
	_, err = UpdateDoc(ctx, s, cursorPath, ModeFile, func(cursors *Cursors, _ bool) error {
		cur := (*cursors)[stream]
		next, err := s.readPast(logPath, cur, opt, &res)
		if err != nil {
			return err
		}
		if next == cur {
			return ErrNoChange
		}
		if *cursors == nil {
			*cursors = Cursors{}
		}
		(*cursors)[stream] = next
		return nil
	})
	return res, err
}

// readPast reads logPath past cur into res and returns the cursor just past
// the last record consumed.
func (s *Store) readPast(logPath string, cur Cursor, opt ReadOptions, res *ReadResult) (Cursor, error) {
	fi, err := os.Stat(logPath)
	if errors.Is(err, os.ErrNotExist) {
		return cur, nil // nothing written yet
	}
	if err != nil {
		return cur, fmt.Errorf("read %s: %w", s.Rel(logPath), err)
	}
	ino := inodeOf(fi)
	start := Position{Offset: cur.Offset, Line: cur.Line}
	skipThrough := "" // after a lost position: pass over records up to this id
	if cur.Inode != 0 && (cur.Inode != ino || cur.Offset > fi.Size()) {
		start, skipThrough, err = s.refind(logPath, cur.LastID)
		if err != nil {
			return cur, err
		}
	}
	r, err := OpenLines(logPath, start)
	if err != nil {
		return cur, fmt.Errorf("read %s: %w", s.Rel(logPath), err)
	}
	defer r.Close()
	// Re-stat the descriptor we read: the name may have moved since.
	if fi, err := r.File().Stat(); err == nil {
		ino = inodeOf(fi)
	}
	next := Cursor{Offset: start.Offset, Line: start.Line, Inode: ino, LastID: cur.LastID}
	for {
		rec, err := r.Next()
		var le *LineError
		switch {
		case errors.Is(err, io.EOF):
			return next, nil
		case errors.As(err, &le):
			le.Path = s.Rel(logPath)
			res.Bad = append(res.Bad, le)
			next.Offset, next.Line = r.Pos().Offset, r.Pos().Line
			continue
		case err != nil:
			return cur, err
		}
		id := gjson.GetBytes(rec.Data, "id").String()
		if skipThrough != "" && id != "" && id <= skipThrough {
			next.Offset, next.Line = r.Pos().Offset, r.Pos().Line
			continue
		}
		if opt.Match != nil && !opt.Match(rec) {
			next.Offset, next.Line = r.Pos().Offset, r.Pos().Line
			continue
		}
		if opt.Limit > 0 && len(res.Records) == opt.Limit {
			res.More = true
			// the cursor stays before this record
			return next, nil
		}
		res.Records = append(res.Records, rec)
		next.Offset, next.Line, next.LastID = r.Pos().Offset, r.Pos().Line, id
	}
}

// refind locates the position just past the record whose id is lastID in a
// file that was replaced or truncated. When that record is gone, it starts at
// the beginning and asks the caller to pass over every record whose id sorts
// at or before lastID (ids are time-sortable), so nothing is returned twice.
func (s *Store) refind(logPath, lastID string) (Position, string, error) {
	if lastID == "" {
		return Position{}, "", nil
	}
	r, err := OpenLines(logPath, Position{})
	if err != nil {
		return Position{}, "", fmt.Errorf("read %s: %w", s.Rel(logPath), err)
	}
	defer r.Close()
	for {
		rec, err := r.Next()
		var le *LineError
		switch {
		case errors.Is(err, io.EOF):
			return Position{}, lastID, nil
		case errors.As(err, &le):
			continue
		case err != nil:
			return Position{}, "", err
		}
		if gjson.GetBytes(rec.Data, "id").String() == lastID {
			return r.Pos(), "", nil
		}
	}
}

func inodeOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
