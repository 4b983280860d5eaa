package fsstore

import (
	"testing"
	"time"

	"aipm/fsstore/internal/storage"
)

// The seams fsstore's tests turn in the storage beneath a store: storage
// offers them to fsstore only (it is internal), and only tests call them,
// on a store not yet shared between goroutines.

// setClock makes now the clock of s's credential back-off: authenticate's
// (auth.json).
func (s *Store) setClock(now func() time.Time) { s.files.SetClock(now) }

// setBeforeWrite makes fn run in every read-modify-write of a document of
// s between its read and its write, where an editor's save would race it;
// nil stops it.
func (s *Store) setBeforeWrite(fn func(path string)) { s.files.SetBeforeWrite(fn) }

// setAdvanceAfter sets how much of an agent's own copies a peek of s must
// pass over before it moves the committed chat cursor past them.
func (s *Store) setAdvanceAfter(n int64) { s.files.SetAdvanceAfter(n) }

// pretendFilesystem makes this process take every directory to be on the
// filesystem named (storage.PretendFilesystem) until the test ends or stop
// is called.
func pretendFilesystem(t *testing.T, name string) (stop func()) {
	t.Helper()
	stop, err := storage.PretendFilesystem(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return stop
}
