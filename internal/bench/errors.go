package bench

import "errors"

// ErrUnknownTarget says Options.Only names no target.
var ErrUnknownTarget = errors.New("no such target")
