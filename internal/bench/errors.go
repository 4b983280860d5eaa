package bench

import "errors"

var (
	// ErrUnknownTarget says Options.Only names no target.
	ErrUnknownTarget = errors.New("no such target")
	// ErrNotMeasured says a target failed or passed its deadline: Run
	// returns it with every row, those of the target not met and saying why.
	ErrNotMeasured = errors.New("not measured")
)
