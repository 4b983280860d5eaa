package lockedfile

import "golang.org/x/sys/unix"

// exchange swaps the files at a and b atomically (renameat2 with
// RENAME_EXCHANGE). It fails with an error wrapping errExchange where the
// filesystem or kernel cannot.
func exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if err == unix.EINVAL || err == unix.ENOSYS || err == unix.EOPNOTSUPP {
		return errExchange
	}
	return err
}

// sparesSupported: renameNoReplace is.
const sparesSupported = true

// renameNoReplace renames a to b, failing if b exists (renameat2 with
// RENAME_NOREPLACE).
func renameNoReplace(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_NOREPLACE)
}
