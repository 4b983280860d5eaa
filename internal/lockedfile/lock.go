package lockedfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile opens path (creating it with perm if needed) through OpenFile,
// so a lock file is a regular file reached without a symbolic link, and
// takes its flock (how: LOCK_EX or LOCK_SH), waiting as long as the holder
// needs but no longer than ctx allows (flockCtx). Closing the file releases
// the lock.
func lockFile(ctx context.Context, path string, perm os.FileMode, how int) (*os.File, error) {
	f, err := OpenFile(path, os.O_RDONLY|os.O_CREATE, perm)
	if err != nil {
		return nil, err
	}
	if err := flockCtx(ctx, f, how); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

// Lock takes the flock of path (creating the file with perm if needed) and
// returns the function that releases it. The lock file is never removed:
// removing it would let two lockers hold locks on different inodes.
func Lock(ctx context.Context, path string, perm os.FileMode) (unlock func(), err error) {
	held := rankAcquire(path, true)
	f, err := lockFile(ctx, path, perm, syscall.LOCK_EX)
	if err != nil {
		held.release()
		return nil, err
	}
	return func() { held.release(); f.Close() }, nil
}

// TryLock takes the flock of path (created with perm if needed) if no one
// holds it, without waiting: ok false says another process does. The lock
// is the process's until unlock, or until it dies.
func TryLock(path string, perm os.FileMode) (unlock func(), ok bool, err error) {
	f, err := OpenFile(path, os.O_RDONLY|os.O_CREATE, perm)
	if err != nil {
		return nil, false, err
	}
	held := rankAcquire(path, false)
	err = flockRetry(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err != nil {
		held.release()
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { held.release(); f.Close() }, true, nil
}

// Held reports whether some process holds the flock of path (a missing
// file: no one). It only looks: a shared lock taken to look is given back
// at once.
func Held(path string) (bool, error) {
	f, err := Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	err = flockRetry(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("lock %s: %w", path, err)
	}
	return false, nil
}
