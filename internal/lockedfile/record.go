package lockedfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// A record file is a small file rewritten in place under its flock: no
// temporary file, no rename, no fsync. It suits what is cheap to lose and
// written often (what a session's model was told, at every tool call):
// unlike a document's rename it adds no directory change to the journal
// that other processes' fsyncs must write. A power cut may leave it torn;
// its reader then sees no record.

// ReadRecord returns the content of the record file at path, read under
// its shared flock; nil when there is none.
func ReadRecord(path string) ([]byte, error) {
	rank := rankAcquire(path, true)
	data, err := readRecord(path)
	rank.release()
	return data, err
}

// readRecord is ReadRecord, while the lock-order checker counts the
// file's lock held.
func readRecord(path string) ([]byte, error) {
	f, err := Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := flockRetry(int(f.Fd()), syscall.LOCK_SH); err != nil {
		return nil, fmt.Errorf("flock %s: %w", path, err)
	}
	return io.ReadAll(f)
}

// SwapRecord rewrites the record file at path under its exclusive flock:
// edit gets the content (nil for none) and returns the new one; an error
// from edit writes nothing and is returned. With create, a missing file is
// created with perm; without, a missing file is os.ErrNotExist.
func SwapRecord(ctx context.Context, path string, perm os.FileMode, create bool, edit func(old []byte) ([]byte, error)) error {
	rank := rankAcquire(path, true)
	err := swapRecord(ctx, path, perm, create, edit)
	rank.release()
	return err
}

// swapRecord is SwapRecord, while the lock-order checker counts the
// file's lock held.
func swapRecord(ctx context.Context, path string, perm os.FileMode, create bool, edit func(old []byte) ([]byte, error)) error {
	flag := os.O_RDWR
	if create {
		flag |= os.O_CREATE
	}
	f, err := OpenFile(path, flag, perm)
	if err != nil {
		return err
	}
	// On an error flockCtx closes f itself, once a flock(2) still pending
	// is answered: closing it here too would let the descriptor be reused
	// under that late lock.
	if err := flockCtx(ctx, f, syscall.LOCK_EX); err != nil {
		return fmt.Errorf("flock %s: %w", path, err)
	}
	defer f.Close()
	old, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	out, err := edit(old)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(out, 0); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if len(out) < len(old) {
		if err := f.Truncate(int64(len(out))); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}

// IDEndingAt returns the id of the record that ends (with its newline)
// just before offset off of the file at path; ok is false when no record
// ends there (or there is no such file).
func IDEndingAt(path string, off int64) (id string, ok bool, err error) {
	f, err := Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || off > fi.Size() {
		return "", false, err
	}
	return idEndingAt(f, off)
}
