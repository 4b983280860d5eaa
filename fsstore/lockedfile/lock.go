package lockedfile

import (
	"context"
	"errors"
	"os"

	"github.com/gofrs/flock"
)

// lock takes fl, waiting as long as the holder needs but no longer than ctx
// allows. The common, uncontended case is one non-blocking flock(2); a
// contended one blocks in flock(2) (no polling, so it wakes the moment the
// holder lets go) in a goroutine that releases the lock if ctx ended first.
func lock(ctx context.Context, fl *flock.Flock) error {
	if ok, err := fl.TryLock(); err != nil || ok {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- fl.Lock() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		go func() {
			if <-done == nil {
				fl.Unlock()
			}
		}()
		return ctx.Err()
	}
}

// Lock takes the flock of path (creating the file with perm if needed) and
// returns the function that releases it. The lock file is never removed:
// removing it would let two lockers hold locks on different inodes.
func Lock(ctx context.Context, path string, perm os.FileMode) (unlock func(), err error) {
	fl := flock.New(path, flock.SetPermissions(perm))
	if err := lock(ctx, fl); err != nil {
		return nil, err
	}
	return func() { fl.Unlock() }, nil
}

// TryLock takes the flock of path (created with perm if needed) if no one
// holds it, without waiting: ok false says another process does. The lock
// is the process's until unlock, or until it dies.
func TryLock(path string, perm os.FileMode) (unlock func(), ok bool, err error) {
	fl := flock.New(path, flock.SetPermissions(perm))
	if ok, err = fl.TryLock(); err != nil || !ok {
		return nil, false, err
	}
	return func() { fl.Unlock() }, true, nil
}

// Held reports whether some process holds the flock of path (a missing
// file: no one). It only looks: a shared lock taken to look is given back
// at once.
func Held(path string) (bool, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	fl := flock.New(path)
	ok, err := fl.TryRLock()
	if err != nil {
		return false, err
	}
	if ok {
		fl.Unlock()
	}
	return !ok, nil
}
