package lockedfile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

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
	Data   []byte // the line without its newline; a valid JSON object
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
	path  string
	f     *os.File
	owned bool
	br    *bufio.Reader
	pos   Position
	tail  int64
}

// openLines opens path for reading from pos. The caller closes it.
func openLines(path string, pos Position) (*LineReader, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	r, err := NewLineReader(f, path, pos)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.owned = true
	return r, nil
}

// NewLineReader reads the open file f (named path in errors) from pos.
// Closing the reader does not close f.
func NewLineReader(f *os.File, path string, pos Position) (*LineReader, error) {
	return newLineReader(f, path, pos, maxLineBuffer)
}

func newLineReader(f *os.File, path string, pos Position, buffer int) (*LineReader, error) {
	if _, err := f.Seek(pos.Offset, io.SeekStart); err != nil {
		return nil, fmt.Errorf("seek %s to %d: %w", path, pos.Offset, err)
	}
	return &LineReader{path: path, f: f, br: bufio.NewReaderSize(f, buffer), pos: pos}, nil
}

// maxLineBuffer is the read buffer of a LineReader: lines longer than it
// are read in parts.
const maxLineBuffer = 64 << 10

// newLineReaderFor is NewLineReader for a read of about left bytes (the
// file's size past pos, when the read began): its buffer is no larger
// than they need, so that a read of what is new, a line or two, does not
// allocate the whole buffer at every call.
func newLineReaderFor(f *os.File, path string, pos Position, left int64) (*LineReader, error) {
	return newLineReader(f, path, pos, int(min(max(left+1, 512), maxLineBuffer)))
}

// Pos is the position after the last line Next consumed.
func (r *LineReader) Pos() Position { return r.pos }

// Tail is, after Next returned io.EOF, the number of bytes of an
// unterminated last line: a write in progress, or a writer that died.
func (r *LineReader) Tail() int64 { return r.tail }

// Close closes the file if openLines opened it.
func (r *LineReader) Close() error {
	if r.owned {
		return r.f.Close()
	}
	return nil
}

// Next returns the next complete line. Blank lines are skipped.
func (r *LineReader) Next() (Record, error) {
	for {
		data, n, long, err := r.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				r.tail = n
				return Record{}, io.EOF
			}
			return Record{}, fmt.Errorf("read %s: %w", r.path, err)
		}
		rec := Record{Line: r.pos.Line + 1, Offset: r.pos.Offset}
		r.pos = Position{Offset: r.pos.Offset + n, Line: rec.Line}
		if long {
			return rec, &LineError{Path: r.path, Line: rec.Line, Err: ErrLineTooLong}
		}
		rec.Data = data[:len(data)-1]
		trimmed := bytes.TrimSpace(rec.Data)
		if len(trimmed) == 0 {
			continue
		}
		if reason := InvalidLine(trimmed); reason != "" {
			return rec, &LineError{Path: r.path, Line: rec.Line, Err: errors.New(reason)}
		}
		return rec, nil
	}
}

// MaxLine is the most a reader keeps of one JSONL line, newline included:
// a longer one (no line aipm writes comes near) is consumed and reported
// as ErrLineTooLong, never held in memory whole.
const MaxLine = MaxDocument

// readLine reads the next line as bufio's ReadBytes does (data ends with
// its newline unless err), keeping at most MaxLine bytes of it: long says
// it was longer (data is then nil). n is its whole length.
func (r *LineReader) readLine() (data []byte, n int64, long bool, err error) {
	for {
		chunk, err := r.br.ReadSlice('\n')
		n += int64(len(chunk))
		if !long && len(data)+len(chunk) > MaxLine {
			long, data = true, nil
		}
		if !long {
			data = append(data, chunk...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return data, n, long, err
		}
	}
}

// InvalidLine says why a trimmed, non-empty line is not a JSON object, or ""
// if it is one.
func InvalidLine(b []byte) string {
	if b[0] != '{' {
		return "not a JSON object"
	}
	if !json.Valid(b) {
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return "invalid JSON: " + JSONWords(b, err)
		}
		return "invalid JSON"
	}
	return ""
}

// ReadAll returns every valid complete line of path, the invalid lines as
// errors, and the size of a torn tail. A missing file reads as empty.
func ReadAll(path string) (recs []Record, bad []*LineError, tail int64, err error) {
	r, err := openLines(path, Position{})
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
