package lockedfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/tidwall/gjson"
)

// Remembered is how many ids of consumed records a Cursor keeps: enough to
// find its place again after a hand edit removed the last few.
const Remembered = 8

// Cursor is a reader's place in a JSONL file whose records carry an "id":
// the position after the last record it consumed, the inode that position
// was measured in, and the ids of the last records consumed (LastID is the
// record that ends at Offset). RedeliverBefore, when set, marks the records
// that start before that offset as possibly seen already.
type Cursor struct {
	Offset          int64    `json:"offset"`
	Line            int      `json:"line"`
	Inode           uint64   `json:"inode"`
	LastID          string   `json:"lastId,omitempty"`
	Earlier         []string `json:"earlierIds,omitempty"` // oldest first, before LastID
	RedeliverBefore int64    `json:"redeliverBefore,omitempty"`
}

// advance moves c past a consumed record with the given id that ends at pos.
func (c *Cursor) advance(pos Position, id string) {
	if c.LastID != "" {
		c.Earlier = append(c.Earlier, c.LastID)
		if n := len(c.Earlier) - (Remembered - 1); n > 0 {
			c.Earlier = append(c.Earlier[:0:0], c.Earlier[n:]...)
		}
	}
	c.LastID, c.Offset, c.Line = id, pos.Offset, pos.Line
}

// ReadOptions shape one ReadPast.
type ReadOptions struct {
	// Limit is the most records returned; 0 means no limit.
	Limit int
	// Match selects the records the reader wants (nil: all). Records that do
	// not match are consumed without being returned.
	Match func(Record) bool
	// Check validates a record beyond being a JSON object with an id; a
	// record it refuses is a bad line.
	Check func(Record) error
	// Strict stops at the first bad line and returns it as the error
	// (a *LineError): nothing past a record that was not understood is
	// consumed. Otherwise bad lines are listed in Bad and passed over.
	Strict bool
	// SkipTo, when set (its Offset, Line, Inode and LastID), is a place
	// past cur to start at instead: taken only when it lies past cur in
	// the file cur was measured in (or, for a cursor that never read, the
	// file now) and the record that ends there is still its LastID, as
	// checked on the descriptor the read uses. Result.Skipped says so.
	SkipTo Cursor
}

// ReadResult is what ReadPast returns.
type ReadResult struct {
	Records []Record
	// Redelivered[i] says Records[i] may have been returned before: the
	// cursor lost its place and every id it remembered is gone, or the
	// caller marked a range as already delivered.
	Redelivered []bool
	// More says at least one more matching record is past the last one.
	More bool
	// Bad lists invalid complete lines that were passed over.
	Bad []*LineError
	// Next is the cursor just past the last record consumed.
	Next Cursor
	// First is the cursor just before the first record returned (Next when
	// none is): what a reader that passed over records not for it may start
	// from next time to find the same records without passing over them again.
	First Cursor
	// Skipped says the read started at ReadOptions.SkipTo.
	Skipped bool
	// Tail is, when the read reached the end of the file, the size of its
	// unterminated last line (a write in progress, or a writer that died),
	// which is line TailLine; never a record. Both are 0 when the file ends
	// with a newline, or the read stopped before its end (Limit).
	Tail     int64
	TailLine int
}

// ReadPast reads the records of path past cur, oldest first, and returns
// them with the cursor after them. Everything is decided on one descriptor:
// the offset is trusted only when the file is the inode it was measured in
// and the record that ends there is cur.LastID; otherwise the place is found
// again by the remembered ids (records with a remembered id are not returned
// again), and when none is left the whole file is delivered again, marked.
// It never relies on ids sorting in file order. A missing file reads as
// empty. Its cost is proportional to what is new, except after a lost place.
func ReadPast(path string, cur Cursor, opt ReadOptions) (ReadResult, error) {
	res := ReadResult{Next: cur}
	f, err := Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return res, nil
	}
	if err != nil {
		return res, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return res, err
	}
	if to, ok, err := skipTo(f, cur, opt.SkipTo, Inode(fi), fi.Size()); err != nil {
		return res, fmt.Errorf("read %s: %w", path, err)
	} else if ok {
		cur, res.Skipped = to, true
	}
	next := cur
	next.Earlier = slices.Clone(cur.Earlier)
	next.Inode = Inode(fi)
	start, skip, err := locate(f, path, &next, cur, fi.Size())
	if err != nil {
		return res, err
	}
	r, err := newLineReaderFor(f, path, start, fi.Size()-start.Offset)
	if err != nil {
		return res, err
	}
	return readRecords(r, path, res, next, skip, opt)
}

// readRecords is ReadPast's reading: the records of r from next on, as
// opt says, into res; the records whose ids are in skip are consumed
// without being returned (they were, before a lost place was found again).
func readRecords(r *LineReader, path string, res ReadResult, next Cursor, skip map[string]bool, opt ReadOptions) (ReadResult, error) {
	redeliverBefore := next.RedeliverBefore
	for {
		rec, err := r.Next()
		var le *LineError
		switch {
		case errors.Is(err, io.EOF):
			res.Tail, res.TailLine = r.Tail(), r.Pos().Line+1
			if res.Tail == 0 {
				res.TailLine = 0
			}
			return finish(res, next), nil
		case errors.As(err, &le):
		case err != nil:
			return res, err
		}
		id := ""
		if le == nil {
			id, le = recordID(path, rec, opt.Check)
		}
		if le != nil {
			if opt.Strict {
				return res, le
			}
			res.Bad = append(res.Bad, le)
			continue // the cursor moves past it with the next good record
		}
		if skip[id] || (opt.Match != nil && !opt.Match(rec)) {
			next.advance(r.Pos(), id)
			continue
		}
		if opt.Limit > 0 && len(res.Records) == opt.Limit {
			res.More = true
			return finish(res, next), nil
		}
		if len(res.Records) == 0 {
			res.First = next
			res.First.Earlier = slices.Clone(next.Earlier)
		}
		res.Records = append(res.Records, rec)
		res.Redelivered = append(res.Redelivered, rec.Offset < redeliverBefore)
		next.advance(r.Pos(), id)
	}
}

// recordID is the id of a complete, valid JSON line, or why the line is
// not a record: no "id", or refused by check.
func recordID(path string, rec Record, check func(Record) error) (string, *LineError) {
	id := gjson.GetBytes(rec.Data, "id").String()
	if id == "" {
		return "", &LineError{Path: path, Line: rec.Line, Err: errors.New(`no "id"`)}
	}
	if check != nil {
		if err := check(rec); err != nil {
			return "", &LineError{Path: path, Line: rec.Line, Err: err}
		}
	}
	return id, nil
}

// skipTo is ReadOptions.SkipTo's rule: the cursor to start at instead of
// cur, if mark is one to take, in f (whose inode and size are given).
func skipTo(f *os.File, cur, mark Cursor, inode uint64, size int64) (Cursor, bool, error) {
	if mark.Offset == 0 {
		return cur, false, nil
	}
	if cur.Inode != 0 { // measured in that file, whatever the path names now
		inode = cur.Inode
	}
	if mark.Inode != inode || mark.Offset <= cur.Offset || mark.LastID == "" || mark.Offset > size {
		return cur, false, nil
	}
	// The record the mark follows must still end there: a file that reuses
	// the inode number (a later compaction) holds other records.
	if id, ok, err := idEndingAt(f, mark.Offset); err != nil || !ok || id != mark.LastID {
		return cur, false, nil // not there (a read that fails is the read's to report)
	}
	return Cursor{Offset: mark.Offset, Line: mark.Line, Inode: inode, LastID: mark.LastID, RedeliverBefore: cur.RedeliverBefore}, true, nil
}

func finish(res ReadResult, next Cursor) ReadResult {
	if next.RedeliverBefore <= next.Offset {
		next.RedeliverBefore = 0
	}
	res.Next = next
	if len(res.Records) == 0 {
		res.First = next
	}
	return res
}

// locate decides where reading starts: cur's offset if it can be trusted,
// otherwise the place found again by id. It sets next's position (and
// RedeliverBefore) accordingly and returns the ids to pass over.
func locate(f *os.File, path string, next *Cursor, cur Cursor, size int64) (Position, map[string]bool, error) {
	if cur.Offset == 0 && cur.LastID == "" && len(cur.Earlier) == 0 {
		return Position{}, nil, nil // a new cursor
	}
	if cur.Inode == next.Inode && cur.Offset <= size {
		id, ok, err := idEndingAt(f, cur.Offset)
		if err != nil {
			return Position{}, nil, fmt.Errorf("read %s: %w", path, err)
		}
		// A cursor without ids (an old read.json) is trusted on a line boundary.
		if ok && (id == cur.LastID || cur.LastID == "" && len(cur.Earlier) == 0) {
			return Position{Offset: cur.Offset, Line: cur.Line}, nil, nil
		}
	}
	return refind(f, path, next, cur)
}

// idEndingAt returns the id of the line that ends (with its newline) just
// before off; ok is false when no line ends there.
func idEndingAt(f *os.File, off int64) (id string, ok bool, err error) {
	if off == 0 {
		return "", false, nil
	}
	for window := int64(4 << 10); ; window *= 2 {
		start := max(0, off-window)
		buf := make([]byte, off-start)
		if _, err := f.ReadAt(buf, start); err != nil {
			return "", false, err
		}
		if buf[len(buf)-1] != '\n' {
			return "", false, nil
		}
		body := buf[:len(buf)-1]
		i := lastNewline(body)
		if i < 0 && start > 0 && window < 4<<20 {
			continue // the line is longer than the window
		}
		return gjson.GetBytes(body[i+1:], "id").String(), i >= 0 || start == 0, nil
	}
}

func lastNewline(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			return i
		}
	}
	return -1
}

// refind scans the whole file for the newest remembered id and resumes just
// past it, passing over records with remembered ids after it (they were
// consumed); a range marked as delivered before moves with the last id. When no remembered id is left it starts at the beginning and
// marks everything now in the file as possibly delivered before.
func refind(f *os.File, path string, next *Cursor, cur Cursor) (Position, map[string]bool, error) {
	ordered := slices.Clone(cur.Earlier)
	if cur.LastID != "" {
		ordered = append(ordered, cur.LastID)
	}
	rank := make(map[string]int, len(ordered))
	for i, id := range ordered {
		rank[id] = i + 1
	}
	r, err := NewLineReader(f, path, Position{})
	if err != nil {
		return Position{}, nil, err
	}
	best := 0
	var found, end Position
	for {
		rec, err := r.Next()
		var le *LineError
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.As(err, &le) {
			continue
		}
		if err != nil {
			return Position{}, nil, err
		}
		end = r.Pos()
		if k := rank[gjson.GetBytes(rec.Data, "id").String()]; k > 0 && k >= best {
			best, found = k, r.Pos()
		}
	}
	if best > 0 {
		skip := make(map[string]bool, len(ordered)-best)
		for _, id := range ordered[best:] {
			skip[id] = true
		}
		next.Offset, next.Line, next.RedeliverBefore = found.Offset, found.Line, 0
		if best == len(ordered) && cur.RedeliverBefore > cur.Offset {
			// The last record consumed ends at found here and at cur.Offset
			// in the file measured: what followed it moved with it (a
			// compaction dropped the head), and so does the range marked
			// as delivered before.
			next.RedeliverBefore = cur.RedeliverBefore + found.Offset - cur.Offset
		}
		next.LastID, next.Earlier = ordered[best-1], ordered[:best-1]
		return found, skip, nil
	}
	next.Offset, next.Line, next.RedeliverBefore = 0, 0, end.Offset
	next.LastID, next.Earlier = "", nil
	return Position{}, nil, nil
}
