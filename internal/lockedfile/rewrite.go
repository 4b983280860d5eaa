package lockedfile

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"syscall"
)

// withLock runs fn holding the flock of the JSONL file at path (the file
// itself is its lock, as for appends), with the file's FileInfo as the lock
// saw it: the inode the lock is on.
func withLock(ctx context.Context, path string, perm os.FileMode, fn func(held os.FileInfo) error) error {
	rank := rankAcquire(path, true)
	err := withLockHeld(ctx, path, perm, fn)
	rank.release()
	return err
}

// withLockHeld is withLock, while the lock-order checker counts the
// file's lock held.
func withLockHeld(ctx context.Context, path string, perm os.FileMode, fn func(held os.FileInfo) error) error {
	f, err := lockFile(ctx, path, perm, syscall.LOCK_EX)
	if err != nil {
		return fmt.Errorf("lock %s: %w", path, err)
	}
	defer f.Close()
	held, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	return fn(held)
}

// ReadLocked reads the whole JSONL file at path under its lock, so that a
// torn tail it sees is not an append in progress. held names the inode
// read, for RewriteKeeping.
func ReadLocked(ctx context.Context, path string, perm os.FileMode) (data []byte, held os.FileInfo, err error) {
	err = withLock(ctx, path, perm, func(fi os.FileInfo) error {
		held = fi
		data, err = readAllFile(path)
		return err
	})
	return data, held, err
}

// RewriteKeeping replaces the JSONL file at path, under its lock, by the
// byte ranges keep of data (what ReadLocked returned) followed by whatever
// was appended since. It refuses with ErrChanged unless the file is still
// the inode read and still begins with data. Appenders blocked on the lock
// see the new inode and retry (ErrReplaced).
func RewriteKeeping(ctx context.Context, path string, read os.FileInfo, data []byte, keep [][2]int, durable bool) error {
	return withLock(ctx, path, read.Mode().Perm(), func(held os.FileInfo) error {
		now, err := readAllFile(path)
		if err != nil {
			return err
		}
		if !os.SameFile(held, read) || !bytes.HasPrefix(now, data) {
			return ErrChanged
		}
		var out bytes.Buffer
		for _, k := range keep {
			out.Write(data[k[0]:k[1]])
		}
		appended := now[len(data):]
		if len(data) > 0 && data[len(data)-1] != '\n' {
			// an appender ended the torn tail with a newline before its line
			appended = bytes.TrimPrefix(appended, []byte("\n"))
		}
		out.Write(appended)
		return WriteAtomic(path, out.Bytes(), held.Mode().Perm(), durable, nil)
	})
}

// readAllFile reads the whole of a JSONL file, opened as OpenFile opens:
// unbounded (a log grows), but only ever a regular file.
func readAllFile(path string) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if fi, err := f.Stat(); err == nil {
		buf.Grow(int(fi.Size()) + 1)
	}
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return buf.Bytes(), nil
}
