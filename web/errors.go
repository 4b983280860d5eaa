package web

import "errors"

// ErrRemote refuses a non-loopback address without AllowRemote.
var ErrRemote = errors.New("not a loopback address")

// ErrAddr refuses an address that is not host:port.
var ErrAddr = errors.New("not host:port")
