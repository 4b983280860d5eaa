package web

import (
	"errors"

	"aipm/fsstore"
)

// ErrRemote refuses a non-loopback address without AllowRemote.
var ErrRemote = errors.New("not a loopback address")

// ErrAddr refuses an address that is not host:port.
var ErrAddr = errors.New("not host:port")

// invalid is a value of a request that the board refuses before any store
// call, in one sentence; it is fsstore.ErrInvalid (the request's fault: 400).
type invalid string

// Error is the sentence.
func (e invalid) Error() string { return string(e) }

// Is makes errors.Is(e, fsstore.ErrInvalid) hold.
func (e invalid) Is(target error) bool { return target == fsstore.ErrInvalid }
