//go:build !linux

package lockedfile

// exchange is not available here: WriteAtomic falls back to a rename after
// its check.
func exchange(a, b string) error { return errExchange }

// renameNoReplace is not available here: temp files are made, never taken
// from a spare pool.
func renameNoReplace(a, b string) error { return errExchange }
