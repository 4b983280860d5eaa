package fsstore

import "errors"

// Errors of the agent commands, for callers that choose an exit code.
var (
	// ErrInUse says an agent still has open tasks or live sessions.
	ErrInUse = errors.New("in use")
	// errNotAI says an operation that only AI agents have (a passkey) was
	// asked of a human.
	errNotAI = errors.New("not an AI agent")
)

// errNobodyToInterrupt says an interrupt about no task found no live
// session of its agent to read it.
var errNobodyToInterrupt = errors.New("nobody to interrupt")

// ErrNotificationsUnreadable wraps the error of a notifications line that
// could not be decoded: the caller fails closed.
var ErrNotificationsUnreadable = errors.New("notifications unreadable")

// ErrNothingToDo says authenticate found no work for the agent.
var ErrNothingToDo = errors.New("nothing to do")

// session errors, for callers that explain them.
var (
	ErrBadToken       = errors.New("invalid session token")
	ErrSessionEnded   = errors.New("session ended")
	ErrSessionExpired = errors.New("session expired")
	// ErrExpiryNotSaved comes with a valid session whose sliding expiry
	// could not be written: a caller may go on with the session.
	ErrExpiryNotSaved = errors.New("the session's expiry could not be saved")
)

// ErrLeaseConflict is the kind of a take refused because another holder's
// lease overlaps (a *LeaseConflictError says whose).
var ErrLeaseConflict = errors.New("leased by another")
