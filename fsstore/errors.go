package fsstore

import (
	"errors"
	"fmt"
	"syscall"
)

// ErrNotFound says a document or agent does not exist; callers branch on it
// with errors.Is.
var ErrNotFound = errors.New("not found")

// ErrExists says something that must be new already exists.
var ErrExists = errors.New("already exists")

// LineError locates a problem inside a file as path:line: reason (DESIGN
// section 4, rule 5).
type LineError struct {
	Path string
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// IsDiskFull reports whether err is a write refused for lack of space: a
// full disk, a quota, or a file size limit (RLIMIT_FSIZE).
func IsDiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EFBIG)
}
