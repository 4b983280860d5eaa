package sshtest

import "errors"

// ErrMissing wraps Missing's reason in Start's error.
var ErrMissing = errors.New("ssh programs missing")
