package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"aipm/internal/lockedfile"
)

// The file primitives, under the names the rest of aipm uses.
type (
	// Record is one complete line of a JSONL file.
	Record = lockedfile.Record
	// LineError locates a problem inside a file as path:line: reason
	// (DESIGN section 4, rule 5).
	LineError = lockedfile.LineError
)

// ReadAll returns every valid complete line of path, the invalid lines as
// errors, and the size of a torn tail. A missing file reads as empty.
func ReadAll(path string) ([]Record, []*LineError, int64, error) { return lockedfile.ReadAll(path) }

// replacedPatience bounds how long an append keeps retrying while an editor
// keeps replacing the file under it.
const replacedPatience = 2 * time.Second

// AppendJSONL marshals rec as one compact JSON line and appends it to path
// under DESIGN section 4 rules 1, 2 and 7. Missing parent directories are
// created.
func (s *Files) AppendJSONL(ctx context.Context, path string, rec any) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return s.Failed("append", path, fmt.Errorf("encode: %w", err))
	}
	return s.AppendLine(ctx, path, line)
}

// WriteJSONL is the first half of AppendJSONL: see writeLine.
func (s *Files) WriteJSONL(ctx context.Context, path string, rec any) (flush func() error, err error) {
	line, err := json.Marshal(rec)
	if err != nil {
		return nil, s.Failed("append", path, fmt.Errorf("encode: %w", err))
	}
	return s.writeLine(ctx, path, line, nil)
}

// WriteJSONLChange is WriteJSONL that also returns the file's stamps just
// before and after the line (lockedfile.Change; zero if nothing was
// written), for a caller that keeps something read from the file valid
// across its own line.
func (s *Files) WriteJSONLChange(ctx context.Context, path string, rec any) (flush func() error, ch lockedfile.Change, err error) {
	line, err := json.Marshal(rec)
	if err != nil {
		return nil, ch, s.Failed("append", path, fmt.Errorf("encode: %w", err))
	}
	flush, err = s.writeLineWith(ctx, path, line, lockedfile.AppendOptions{Durable: s.Durable.Load(), Changed: &ch})
	return flush, ch, err
}

// AppendLine appends one line (without its newline) to path. A write that
// failed for lack of room is a *CodeError disk_full, and leaves no fragment.
func (s *Files) AppendLine(ctx context.Context, path string, line []byte) error {
	return s.AppendUnless(ctx, path, line, nil)
}

// AppendUnless is AppendLine that writes nothing if the file already holds
// the bytes unless (nil: always write).
func (s *Files) AppendUnless(ctx context.Context, path string, line, unless []byte) error {
	flush, err := s.writeLine(ctx, path, line, unless)
	if err != nil {
		return err
	}
	return flush()
}

// writeLine is the first half of an append: the line is in the file, and
// on disk once the returned flush succeeds (it must be called, once). A
// caller writing two files (the dual write) writes both, then flushes both:
// neither copy waits for the other's fsync to be written. Missing parent
// directories are created.
func (s *Files) writeLine(ctx context.Context, path string, line, unless []byte) (flush func() error, err error) {
	return s.writeLineWith(ctx, path, line, lockedfile.AppendOptions{Durable: s.Durable.Load(), Unless: unless})
}

// appendRecord appends line without waiting for the disk: for a record
// kept for humans, never a promise made to a caller (receipts). A crash
// may lose it; nothing tears it.
func (s *Files) appendRecord(ctx context.Context, path string, line []byte) error {
	flush, err := s.writeLineWith(ctx, path, line, lockedfile.AppendOptions{})
	if err != nil {
		return err
	}
	return flush()
}

// writeLineWith is writeLine with its append options.
func (s *Files) writeLineWith(ctx context.Context, path string, line []byte, opt lockedfile.AppendOptions) (flush func() error, err error) {
	a := s.io.appenders.Get(path, ModeFile)
	deadline := time.Now().Add(replacedPatience)
	for attempt := 0; ; attempt++ {
		flush, err := a.Write(ctx, line, opt)
		if errors.Is(err, os.ErrNotExist) {
			if mkErr := s.MkdirAll(filepath.Dir(path)); mkErr != nil {
				return nil, fmt.Errorf("append %s: %w", s.Rel(path), mkErr)
			}
			flush, err = a.Write(ctx, line, opt)
		}
		switch {
		case err == nil:
			return func() error {
				if err := flush(); err != nil {
					if errors.Is(err, lockedfile.ErrDiskFull) {
						return s.diskFull(path, err)
					}
					return s.Failed("append", path, fmt.Errorf("flush: %w", err))
				}
				return nil
			}, nil
		case errors.Is(err, lockedfile.ErrDiskFull):
			return nil, s.diskFull(path, err)
		case !errors.Is(err, lockedfile.ErrReplaced):
			return nil, s.Failed("append", path, err)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("append %s: the file kept being replaced (%d attempts): %w", s.Rel(path), attempt+1, err)
		}
		time.Sleep(min(time.Duration(attempt)*100*time.Microsecond, 2*time.Millisecond)) // let the replacer finish
	}
}

// diskFull is the one refusal for a write that found no room.
func (l layout) diskFull(path string, err error) error {
	return &CodeError{Code: CodeDiskFull, Msg: fmt.Sprintf("no room to write %s (%s): nothing was written; free disk space (or raise the file-size limit) and try again", l.Rel(path), l.words(err.Error(), path)), Err: err}
}
