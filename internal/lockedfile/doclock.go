package lockedfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDoc takes the exclusive flock of the file path names, the lock an
// editor can see and take too (docs/files.md, "What a human may edit"):
// while aipm holds it, an editor that takes it before its own
// read-modify-write cannot save. It opens path, locks the descriptor, and
// checks that path still names the file it locked (a save by rename while
// it waited replaces the file: then it locks the new one). A missing file
// needs no lock (unlock does nothing): there is nothing an editor could
// hold. f is the descriptor locked, open for reading at its start (nil
// for none); held, what its fstat said.
func lockDoc(ctx context.Context, path string) (f *os.File, held os.FileInfo, unlock func(), err error) {
	rank := rankAcquire(path, true)
	for {
		f, err := Open(path)
		if errors.Is(err, os.ErrNotExist) {
			rank.release()
			return nil, nil, func() {}, nil
		}
		if err != nil {
			rank.release()
			return nil, nil, nil, err
		}
		if err := flockCtx(ctx, f, syscall.LOCK_EX); err != nil {
			rank.release()
			return nil, nil, nil, fmt.Errorf("lock %s: %w", path, err)
		}
		held, herr := f.Stat()
		now, nerr := os.Stat(path)
		if herr == nil && nerr == nil && os.SameFile(held, now) {
			return f, held, func() { rank.release(); f.Close() }, nil // closing the last descriptor lets go of the flock
		}
		f.Close()
		if herr != nil {
			rank.release()
			return nil, nil, nil, herr
		}
		if nerr != nil && !errors.Is(nerr, os.ErrNotExist) {
			rank.release()
			return nil, nil, nil, nerr
		}
	}
}

// flockCtx takes the flock how (LOCK_EX or LOCK_SH) of f, waiting no
// longer than ctx allows: the common, uncontended case is one
// non-blocking flock(2); a contended one blocks in flock(2) (no polling)
// in a goroutine. On an error f is closed: when ctx ended first, only once the
// pending request is answered (and a late lock given back), so the
// descriptor is never reused under a blocked flock(2).
func flockCtx(ctx context.Context, f *os.File, how int) error {
	fd := int(f.Fd())
	err := flockRetry(fd, how|syscall.LOCK_NB)
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		if err != nil {
			f.Close()
		}
		return err
	}
	done := make(chan error, 1)
	go func() { done <- flockRetry(fd, how) }()
	select {
	case err := <-done:
		if err != nil {
			f.Close()
		}
		return err
	case <-ctx.Done():
		go func() {
			if <-done == nil {
				flockRetry(fd, syscall.LOCK_UN)
			}
			f.Close()
		}()
		return ctx.Err()
	}
}
