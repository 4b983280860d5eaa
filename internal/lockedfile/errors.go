package lockedfile

import (
	"errors"
	"fmt"
	"syscall"
)

// LineError locates a problem inside a file as path:line: reason.
type LineError struct {
	Path string
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// ErrReplaced says the path was renamed over after it was opened for
// locking (an editor's rename-replace).
var ErrReplaced = errors.New("file replaced while locking")

// ErrDiskFull wraps every write error that means "no room": no space left,
// quota exceeded, or the file-size limit reached.
var ErrDiskFull = errors.New("disk full")

// ErrChanged says a document no longer is what was read: someone (an
// editor, say) replaced or rewrote it in between.
var ErrChanged = errors.New("changed since it was read")

// ErrNotRegular says a path names something other than a regular file (a
// FIFO, a device, a socket, a directory): aipm opens none of them, so that
// a hostile or mistaken file can neither block nor flood a reader.
var ErrNotRegular = errors.New("not a regular file")

// ErrLink says a path, or a directory on its way inside a confined root,
// is a symbolic link: aipm never follows one there, for reads or writes.
var ErrLink = errors.New("a symbolic link (aipm never follows links inside .ai-pm)")

// ErrTooLarge says a document is larger than MaxDocument.
var ErrTooLarge = fmt.Errorf("larger than %d MiB, the most aipm reads of a document", MaxDocument>>20)

// ErrLineTooLong says a JSONL line is longer than MaxLine.
var ErrLineTooLong = fmt.Errorf("line longer than %d MiB, the most aipm reads of one line", MaxLine>>20)

// IsNoRoom reports whether err means "no room": ErrDiskFull, no space left,
// quota exceeded, or the file-size limit reached.
func IsNoRoom(err error) bool {
	return errors.Is(err, ErrDiskFull) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EFBIG)
}

// noRoom wraps err with ErrDiskFull when it is one of the no-room errors.
func noRoom(err error) error {
	if IsNoRoom(err) && !errors.Is(err, ErrDiskFull) {
		return fmt.Errorf("%w: %w", ErrDiskFull, err)
	}
	return err
}
