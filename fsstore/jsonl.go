package fsstore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

// errReplaced says the path was renamed over after we opened it for locking.
var errReplaced = errors.New("file replaced while locking")

// appendAttempts bounds retries when an editor keeps replacing the file.
const appendAttempts = 16

// AppendJSONL marshals rec as one compact JSON line and appends it to path
// under DESIGN section 4 rules 1 and 2. Missing parent directories are
// created.
func (s *Store) AppendJSONL(ctx context.Context, path string, rec any) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("append %s: encode: %w", s.Rel(path), err)
	}
	return s.AppendLine(ctx, path, line)
}

// AppendLine appends one line (without its newline) to path.
func (s *Store) AppendLine(ctx context.Context, path string, line []byte) error {
	if bytes.IndexByte(line, '\n') >= 0 {
		return fmt.Errorf("append %s: line contains a newline", s.Rel(path))
	}
	buf := make([]byte, len(line)+1)
	copy(buf, line)
	buf[len(line)] = '\n'
	for attempt := 0; ; attempt++ {
		err := appendOnce(path, buf, s.durable)
		if errors.Is(err, os.ErrNotExist) {
			if mkErr := s.mkdirAll(filepath.Dir(path)); mkErr != nil {
				return fmt.Errorf("append %s: %w", s.Rel(path), mkErr)
			}
			err = appendOnce(path, buf, s.durable)
		}
		if !errors.Is(err, errReplaced) {
			if err != nil {
				return fmt.Errorf("append %s: %w", s.Rel(path), err)
			}
			return nil
		}
		if attempt == appendAttempts || ctx.Err() != nil {
			return fmt.Errorf("append %s: the file kept being replaced (%d attempts): %w", s.Rel(path), attempt+1, err)
		}
		time.Sleep(time.Duration(attempt) * 100 * time.Microsecond) // let the replacer finish

	}
}

// appendOnce is one locked append. The lock is taken on a descriptor that
// gofrs/flock opens by name; the data is written through a second descriptor
// opened by name after locking, and only if both name the same inode, so a
// rename-replace by an editor between the two opens is detected.
func appendOnce(path string, line []byte, durable bool) error {
	w, err := writeLocked(path, line)
	if err != nil {
		return err
	}
	defer w.Close()
	if durable {
		// After the lock is released: the line is whole in the file, and
		// other writers need not wait for our flush. An fsync error means the
		// data may be lost; never retry it into success.
		return w.Sync()
	}
	return nil
}

// writeLocked writes line under the file's lock and returns the descriptor
// it wrote through, unlocked, for the caller to sync and close.
func writeLocked(path string, line []byte) (*os.File, error) {
	fl := flock.New(path, flock.SetPermissions(ModeFile))
	if err := fl.Lock(); err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	defer fl.Unlock()
	w, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, err
	}
	held, err1 := fl.Stat()
	now, err2 := w.Stat()
	if err := errors.Join(err1, err2); err != nil {
		w.Close()
		return nil, err
	}
	if !os.SameFile(held, now) {
		w.Close()
		return nil, errReplaced
	}
	size := now.Size()
	if size > 0 {
		// Under the lock no write is in progress, so a last line without its
		// newline is what a writer that died left. End it, so that our line
		// stays a line of its own; readers then report the fragment as an
		// invalid line and aipm doctor --repair quarantines it.
		var last [1]byte
		if _, err := w.ReadAt(last[:], size-1); err != nil {
			w.Close()
			return nil, fmt.Errorf("read last byte: %w", err)
		}
		if last[0] != '\n' {
			line = append([]byte{'\n'}, line...)
		}
	}
	if n, err := w.Write(line); err != nil {
		if n > 0 {
			// A short write (disk full, a file size limit): take the
			// fragment back, so that no torn line is left behind.
			if terr := w.Truncate(size); terr != nil {
				err = errors.Join(err, fmt.Errorf("remove the partial line: %w", terr))
			}
		}
		w.Close()
		return nil, err
	}
	return w, nil
}

// Position is a place in a JSONL file: a byte offset at the start of a line
// and the number of lines before it (so the next line is Line+1).
type Position struct {
	Offset int64 `json:"offset"`
	Line   int   `json:"line"`
}

// Record is one complete line of a JSONL file.
type Record struct {
	Line   int    // 1-based line number
	Offset int64  // byte offset of the line's first byte
	Data   []byte // the line without its newline; valid JSON object
}

// End is the position just past the record's newline.
func (r Record) End() Position {
	return Position{Offset: r.Offset + int64(len(r.Data)) + 1, Line: r.Line}
}

// LineReader reads a JSONL file from a position. Next returns complete,
// valid lines; it reports an invalid complete line as a *LineError (and moves
// past it); it stops with io.EOF before an unterminated last line, whose size
// Tail reports.
type LineReader struct {
	path string
	f    *os.File
	br   *bufio.Reader
	pos  Position
	tail int64
}

// OpenLines opens path for reading from pos. The caller closes it.
func OpenLines(path string, pos Position) (*LineReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(pos.Offset, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("seek %s to %d: %w", path, pos.Offset, err)
	}
	return &LineReader{path: path, f: f, br: bufio.NewReaderSize(f, 64<<10), pos: pos}, nil
}

// File is the open file, for Stat.
func (r *LineReader) File() *os.File { return r.f }

// Pos is the position after the last line Next consumed.
func (r *LineReader) Pos() Position { return r.pos }

// Tail is, after Next returned io.EOF, the number of bytes of an
// unterminated last line: a write in progress, or a writer that died.
func (r *LineReader) Tail() int64 { return r.tail }

// Close closes the file.
func (r *LineReader) Close() error { return r.f.Close() }

// Next returns the next complete line. Blank lines are skipped.
func (r *LineReader) Next() (Record, error) {
	for {
		data, err := r.br.ReadBytes('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				r.tail = int64(len(data))
				return Record{}, io.EOF
			}
			return Record{}, fmt.Errorf("read %s: %w", r.path, err)
		}
		rec := Record{Line: r.pos.Line + 1, Offset: r.pos.Offset, Data: data[:len(data)-1]}
		r.pos = Position{Offset: r.pos.Offset + int64(len(data)), Line: rec.Line}
		trimmed := bytes.TrimSpace(rec.Data)
		if len(trimmed) == 0 {
			continue
		}
		if reason := invalidLine(trimmed); reason != "" {
			return rec, &LineError{Path: r.path, Line: rec.Line, Err: errors.New(reason)}
		}
		return rec, nil
	}
}

// invalidLine says why a line is not a JSON object, or "" if it is one.
func invalidLine(b []byte) string {
	if b[0] != '{' {
		return "not a JSON object"
	}
	if !json.Valid(b) {
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return "invalid JSON: " + err.Error()
		}
		return "invalid JSON"
	}
	return ""
}

// ReadAll returns every valid complete line of path, the invalid lines as
// errors, and the size of a torn tail. A missing file reads as empty.
func ReadAll(path string) (recs []Record, bad []*LineError, tail int64, err error) {
	r, err := OpenLines(path, Position{})
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, 0, nil
	}
	if err != nil {
		return nil, nil, 0, err
	}
	defer r.Close()
	for {
		rec, err := r.Next()
		var le *LineError
		switch {
		case err == nil:
			recs = append(recs, rec)
		case errors.As(err, &le):
			bad = append(bad, le)
		case errors.Is(err, io.EOF):
			return recs, bad, r.Tail(), nil
		default:
			return recs, bad, 0, err
		}
	}
}
