//go:build !linux

package lockedfile

// exchange is not available here: WriteAtomic falls back to a rename after
// its check.
func exchange(a, b string) error { return errExchange }

// sparesSupported: renameNoReplace is not available here, so temp files
// are made, never taken from a spare pool (UseSpares).
const sparesSupported = false

// renameNoReplace is not available here.
func renameNoReplace(a, b string) error { return errExchange }
