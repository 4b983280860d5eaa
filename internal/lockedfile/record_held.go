package lockedfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
)

// A HeldRecord is the record file at one path (ReadRecord, SwapRecord)
// read and rewritten through a descriptor this process keeps open between
// calls: a read costs the lock, a stat of the path, the read and the
// unlock, where ReadRecord also checks the directories, opens, stats,
// closes. The rules are the record's: everything happens under the file's
// flock, and only while the path still names the inode held (a removal or
// a replacement makes it open the path again). A lock another process
// holds takes the plain way (ReadRecord, SwapRecord), which waits for it.
// Safe for concurrent use.
type HeldRecord struct {
	path string
	perm os.FileMode

	mu  sync.Mutex // serializes uses: a flock belongs to the descriptor, not the goroutine
	f   *os.File   // nil until used, and after Close
	ino uint64     // f's inode
}

// NewHeldRecord returns the HeldRecord of path; a file it creates gets perm.
func NewHeldRecord(path string, perm os.FileMode) *HeldRecord {
	return &HeldRecord{path: path, perm: perm}
}

// Close releases the descriptor; a closed HeldRecord opens the file again
// if used again.
func (r *HeldRecord) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.drop()
}

func (r *HeldRecord) drop() error {
	f := r.f
	r.f = nil
	if f == nil {
		return nil
	}
	return f.Close()
}

// Read is ReadRecord: the record's content, read under its shared flock;
// nil when there is none.
func (r *HeldRecord) Read() ([]byte, error) {
	rank := rankAcquire(r.path, true) // the record's lock, and r.mu that waits for it
	var data []byte
	done, missing, err := r.locked(syscall.LOCK_SH, false, func(f *os.File) (err error) {
		data, err = readFrom0(f)
		return err
	})
	rank.release()
	switch {
	case missing:
		return nil, nil
	case done:
		return data, err
	}
	return ReadRecord(r.path)
}

// Swap is SwapRecord: the record rewritten in place under its exclusive
// flock, with what edit makes of its content (nil for none); an error from
// edit writes nothing and is returned. With create, a missing file is
// created; without, a missing file is os.ErrNotExist.
func (r *HeldRecord) Swap(ctx context.Context, create bool, edit func(old []byte) ([]byte, error)) error {
	rank := rankAcquire(r.path, true)
	done, missing, err := r.locked(syscall.LOCK_EX, create, func(f *os.File) error {
		old, err := readFrom0(f)
		if err != nil {
			return fmt.Errorf("read %s: %w", r.path, err)
		}
		out, err := edit(old)
		if err != nil {
			return err
		}
		if _, err := f.WriteAt(out, 0); err != nil {
			return fmt.Errorf("write %s: %w", r.path, err)
		}
		if len(out) < len(old) {
			if err := f.Truncate(int64(len(out))); err != nil {
				return fmt.Errorf("write %s: %w", r.path, err)
			}
		}
		return nil
	})
	rank.release()
	switch {
	case missing:
		return &os.PathError{Op: "open", Path: r.path, Err: syscall.ENOENT}
	case done:
		return err
	}
	return SwapRecord(ctx, r.path, r.perm, create, edit)
}

// locked runs fn on the held descriptor under r.mu and the flock how,
// taken without waiting, while the path names the inode held. done is
// false when fn did not run and the caller should take the plain way
// (another process holds the lock, or the path kept changing), which it
// does after r.mu is released: the plain way waits for the flock on a
// descriptor of its own, and other uses need not wait behind it. missing
// says there is no file (and create was not asked).
func (r *HeldRecord) locked(how int, create bool, fn func(f *os.File) error) (done, missing bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for attempt := 0; attempt < 2; attempt++ {
		if r.f == nil {
			flag := os.O_RDWR
			if create {
				flag |= os.O_CREATE
			}
			f, err := OpenFile(r.path, flag, r.perm)
			if errors.Is(err, os.ErrNotExist) && !create {
				return false, true, nil
			}
			if err != nil {
				return false, false, nil // the plain way says why
			}
			fi, err := f.Stat()
			if err != nil {
				f.Close()
				return false, false, nil
			}
			r.f, r.ino = f, Inode(fi)
		}
		fd := int(r.f.Fd())
		if err := flockRetry(fd, how|syscall.LOCK_NB); err != nil {
			if !errors.Is(err, syscall.EWOULDBLOCK) {
				r.drop()
			}
			return false, false, nil
		}
		fi, err := os.Stat(r.path)
		if err == nil && Inode(fi) == r.ino {
			err := fn(r.f)
			flockRetry(fd, syscall.LOCK_UN)
			return true, false, err
		}
		// Removed, or replaced: the descriptor names no record any more.
		flockRetry(fd, syscall.LOCK_UN)
		r.drop()
	}
	return false, false, nil
}

// readFrom0 reads all of f from its start, whatever its offset.
func readFrom0(f *os.File) ([]byte, error) {
	return io.ReadAll(io.NewSectionReader(f, 0, MaxDocument+1))
}

// HeldRecords keeps one HeldRecord per record file a process uses, bounded
// as Appenders is: past heldRecordsMax files it starts over (a HeldRecord
// closed while in use elsewhere opens its file again). The zero
// HeldRecords is ready to use.
type HeldRecords struct {
	mu sync.Mutex
	m  map[string]*HeldRecord
}

const heldRecordsMax = 64

// Get returns the HeldRecord of path, creating it (files it creates get
// perm).
func (c *HeldRecords) Get(path string, perm os.FileMode) *HeldRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := c.m[path]; r != nil {
		return r
	}
	if c.m == nil || len(c.m) >= heldRecordsMax {
		for _, r := range c.m {
			go r.Close() // not here: Close waits for a use in progress
		}
		c.m = map[string]*HeldRecord{}
	}
	r := NewHeldRecord(path, perm)
	c.m[path] = r
	return r
}
