package fsstore

import (
	"errors"
	"fmt"

	"aipm/fsstore/lockedfile"
)

// ErrNotFound says a document or agent does not exist; callers branch on it
// with errors.Is.
var ErrNotFound = errors.New("not found")

// ErrExists says something that must be new already exists.
var ErrExists = errors.New("already exists")

// kindError is a complete sentence that errors.Is matches against a
// sentinel kind, without the kind's own text ("not found") appended to a
// message that already says it.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// kindf formats a message of the given kind (ErrNotFound, ErrExists, ...).
func kindf(kind error, format string, args ...any) error {
	return &kindError{msg: fmt.Sprintf(format, args...), kind: kind}
}

// IsDiskFull reports whether err is a write refused for lack of space: a
// full disk, a quota, or a file size limit (RLIMIT_FSIZE).
func IsDiskFull(err error) bool {
	return lockedfile.IsNoRoom(err)
}
