package fsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"aipm/fsstore/lockedfile"
)

// The file primitives, under the names the rest of aipm uses.
type (
	// Position is a place in a JSONL file (offset and lines before it).
	Position = lockedfile.Position
	// Record is one complete line of a JSONL file.
	Record = lockedfile.Record
	// LineReader reads a JSONL file from a position.
	LineReader = lockedfile.LineReader
	// LineError locates a problem inside a file as path:line: reason
	// (DESIGN section 4, rule 5).
	LineError = lockedfile.LineError
)

// OpenLines opens path for reading from pos. The caller closes it.
func OpenLines(path string, pos Position) (*LineReader, error) {
	return lockedfile.OpenLines(path, pos)
}

// ReadAll returns every valid complete line of path, the invalid lines as
// errors, and the size of a torn tail. A missing file reads as empty.
func ReadAll(path string) ([]Record, []*LineError, int64, error) { return lockedfile.ReadAll(path) }

// replacedPatience bounds how long an append keeps retrying while an editor
// keeps replacing the file under it.
const replacedPatience = 2 * time.Second

// AppendJSONL marshals rec as one compact JSON line and appends it to path
// under DESIGN section 4 rules 1, 2 and 7. Missing parent directories are
// created.
func (s *Store) AppendJSONL(ctx context.Context, path string, rec any) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("append %s: encode: %w", s.Rel(path), err)
	}
	return s.AppendLine(ctx, path, line)
}

// AppendLine appends one line (without its newline) to path. A write that
// failed for lack of room is a *CodeError disk_full, and leaves no fragment.
func (s *Store) AppendLine(ctx context.Context, path string, line []byte) error {
	return s.appendUnless(ctx, path, line, nil)
}

// appendUnless is AppendLine that writes nothing if the file already holds
// the bytes unless (nil: always write).
func (s *Store) appendUnless(ctx context.Context, path string, line, unless []byte) error {
	opt := lockedfile.AppendOptions{Durable: s.durable, Perm: ModeFile, Unless: unless}
	deadline := time.Now().Add(replacedPatience)
	for attempt := 0; ; attempt++ {
		err := lockedfile.Append(ctx, path, line, opt)
		if errors.Is(err, os.ErrNotExist) {
			if mkErr := s.mkdirAll(filepath.Dir(path)); mkErr != nil {
				return fmt.Errorf("append %s: %w", s.Rel(path), mkErr)
			}
			err = lockedfile.Append(ctx, path, line, opt)
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, lockedfile.ErrDiskFull):
			return diskFull(s.Rel(path), err)
		case !errors.Is(err, lockedfile.ErrReplaced):
			return fmt.Errorf("append %s: %w", s.Rel(path), err)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("append %s: the file kept being replaced (%d attempts): %w", s.Rel(path), attempt+1, err)
		}
		time.Sleep(min(time.Duration(attempt)*100*time.Microsecond, 2*time.Millisecond)) // let the replacer finish
	}
}

// diskFull is the one refusal for a write that found no room.
func diskFull(rel string, err error) error {
	return &CodeError{Code: "disk_full", Msg: fmt.Sprintf("no room to write %s (%v): nothing was written; free disk space (or raise the file-size limit) and try again", rel, err), Err: err}
}
