package lockedfile

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// TryLockFile takes the exclusive flock of path (created with perm if
// needed) without waiting and returns the open file that holds it: ok
// false says another process holds it. The lock lives on the file's open
// description, so a child process given the file (exec.Cmd.ExtraFiles)
// keeps it after the caller closes its copy, until the child and every
// process that inherited it are gone.
func TryLockFile(path string, perm os.FileMode) (f *os.File, ok bool, err error) {
	f, err = OpenFile(path, os.O_RDWR|os.O_CREATE, perm)
	if err != nil {
		return nil, false, err
	}
	rankKnown(path) // held by a process, never waited for: not recorded
	if ok, err = tryFlock(f, unix.LOCK_EX); !ok || err != nil {
		f.Close()
		return nil, false, err
	}
	return f, true, nil
}

// TryLockDir takes the exclusive flock of the directory dir itself (an
// O_DIRECTORY descriptor) without waiting: no deletion of a file in it
// drops the lock. ok false says another process holds it.
func TryLockDir(dir string) (unlock func(), ok bool, err error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, false, err
	}
	held := rankAcquire(dir, false)
	if ok, err = tryFlock(f, unix.LOCK_EX); !ok || err != nil {
		held.release()
		f.Close()
		return nil, false, err
	}
	return func() { held.release(); f.Close() }, true, nil
}

// HeldDir reports whether some process holds the flock of the directory
// dir (TryLockDir); it only looks.
func HeldDir(dir string) (bool, error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	ok, err := tryFlock(f, unix.LOCK_SH)
	return !ok && err == nil, err
}

// tryFlock takes how (LOCK_EX or LOCK_SH) on f without waiting.
func tryFlock(f *os.File, how int) (bool, error) {
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, unix.EINTR):
			continue
		default:
			return false, fmt.Errorf("flock %s: %w", f.Name(), err)
		}
	}
}
