package storage

import "time"

// The setters below are the seams fsstore's tests reach through (its
// export_test.go): storage is internal to fsstore, so no other package can
// call them. Each is for a Files not yet shared between goroutines.

// SetClock makes now the clock of s's credential back-offs (Now), so that
// a test can hold time still or move it.
func (s *Files) SetClock(now func() time.Time) { s.seams.now = now }

// SetBeforeWrite makes fn run in every UpdateDoc of s between its read and
// its write, where an editor's save would race it; nil stops it.
func (s *Files) SetBeforeWrite(fn func(path string)) { s.seams.beforeWrite = fn }

// SetAdvanceAfter sets how much a peek of s must pass over before it moves
// the committed cursor past it (ReadOptions.Advance); 1 MiB outside tests.
func (s *Files) SetAdvanceAfter(n int64) { s.seams.advanceAfter = n }
