package storage

import "fmt"

// Problem is one thing doctor found, located as Path:Line (Line 0: the
// whole file). Repaired says --repair fixed it; Repairable that --repair
// would (or tried to): the rest only a person can fix.
type Problem struct {
	Path       string // relative to the project directory
	Line       int
	Reason     string
	Repaired   bool
	Repairable bool
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.Path, p.Line, p.Reason)
	}
	return fmt.Sprintf("%s: %s", p.Path, p.Reason)
}
