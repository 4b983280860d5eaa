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
