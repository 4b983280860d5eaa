package lockedfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gofrs/flock"
)

// AppendOptions shape Append.
type AppendOptions struct {
	// Durable fsyncs the line (and, for a new file, its directory) before
	// Append returns.
	Durable bool
	// Perm is the mode of a file Append creates.
	Perm os.FileMode
	// Unless, when set, makes Append write nothing if the file already
	// holds these bytes (checked under the lock): an idempotent append.
	// It reads the whole file, so it is for rare writes.
	Unless []byte
}

// Append appends line (without its newline) to path as one whole line:
// under the file's flock, through an O_APPEND descriptor opened after
// locking, only if the path still names the locked inode (ErrReplaced
// otherwise: the caller retries on the new file). A failed or short write is
// truncated back to the length before it, under the lock, so no fragment is
// left; a write that failed for lack of room wraps ErrDiskFull. The file is
// created if missing; its directory must exist.
func Append(ctx context.Context, path string, line []byte, opt AppendOptions) error {
	if bytes.IndexByte(line, '\n') >= 0 {
		return errors.New("line contains a newline")
	}
	buf := make([]byte, len(line)+1)
	copy(buf, line)
	buf[len(line)] = '\n'
	w, created, err := writeLocked(ctx, path, buf, opt)
	if err != nil || w == nil {
		return err
	}
	defer w.Close()
	if !opt.Durable {
		return nil
	}
	// After the lock is released: the line is whole in the file, and other
	// writers need not wait for our flush. An fsync error means the data
	// may be lost; never retry it into success.
	if err := w.Sync(); err != nil {
		return noRoom(err)
	}
	if created {
		return SyncDir(filepath.Dir(path))
	}
	return nil
}

// writeLocked writes buf under the file's lock and returns the descriptor
// it wrote through, unlocked, for the caller to sync and close; created
// says the file was empty before (so its directory entry may be new).
// A nil descriptor without error means opt.Unless found its bytes.
func writeLocked(ctx context.Context, path string, buf []byte, opt AppendOptions) (w *os.File, created bool, err error) {
	fl := flock.New(path, flock.SetPermissions(opt.Perm))
	if err := lock(ctx, fl); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, false, err
		}
		return nil, false, fmt.Errorf("lock: %w", err)
	}
	defer fl.Unlock()
	w, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, false, err
	}
	held, err1 := fl.Stat()
	now, err2 := w.Stat()
	if err := errors.Join(err1, err2); err != nil {
		w.Close()
		return nil, false, err
	}
	if !os.SameFile(held, now) {
		w.Close()
		return nil, false, ErrReplaced
	}
	size := now.Size()
	if opt.Unless != nil {
		data := make([]byte, size)
		if _, err := w.ReadAt(data, 0); err != nil {
			w.Close()
			return nil, false, fmt.Errorf("read: %w", err)
		}
		if bytes.Contains(data, opt.Unless) {
			w.Close()
			return nil, false, nil
		}
	}
	if size > 0 {
		// Under the lock no write is in progress, so a last line without its
		// newline is what a writer that died left. End it, so that our line
		// stays a line of its own; readers then report the fragment as an
		// invalid line and doctor's repair quarantines it.
		var last [1]byte
		if _, err := w.ReadAt(last[:], size-1); err != nil {
			w.Close()
			return nil, false, fmt.Errorf("read last byte: %w", err)
		}
		if last[0] != '\n' {
			buf = append([]byte{'\n'}, buf...)
		}
	}
	if _, err := w.Write(buf); err != nil {
		// Short or failed: take back whatever part of the line landed, so
		// that the file ends where it ended before (rule 7).
		if terr := w.Truncate(size); terr != nil {
			err = fmt.Errorf("%w (and truncating back to %d bytes failed: %v)", err, size, terr)
		}
		w.Close()
		return nil, false, noRoom(err)
	}
	return w, size == 0, nil
}
