package lockedfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
)

// AppendOptions shape Appender.Write.
type AppendOptions struct {
	// Durable makes the flush fsync the line (and, for a new file, its
	// directory).
	Durable bool
	// Unless, when set, makes Write write nothing if the file already
	// holds these bytes (checked under the lock): an idempotent append.
	// It reads the whole file, so it is for rare writes.
	Unless []byte
	// Changed, when set, receives the file's stamps just before and just
	// after the line, both taken under the lock (one more fstat): a caller
	// that knows what its own line changes in what it keeps of the file can
	// keep it valid across the write (StatCache.Moved). Nothing written
	// leaves it zero, and so does a write that first ended a torn last line
	// (a writer that died left it): that fragment became a line the caller
	// never saw.
	Changed *Change
}

// Change is one append seen under the lock: the file was Before, and
// became After by the line alone.
type Change struct{ Before, After Stamp }

// An Appender appends whole lines to one file through a descriptor it keeps
// open between appends: an append costs a lock on the held descriptor, a
// stat of the path, a write and the unlock, rather than opening the file
// twice. The rules are those of DESIGN section 4: the line is written under
// the file's flock, through O_APPEND, only if the path still names the
// inode held (an editor's rename-replace or a removal makes the Appender
// reopen the path); a failed or short write is truncated back under the
// lock. Safe for concurrent use.
type Appender struct {
	path string
	perm os.FileMode

	mu  sync.Mutex // serializes appends: a flock belongs to the descriptor, not the goroutine
	cur *handle    // nil until the first append, and after Close
}

// handle is an open descriptor with the writes that have yet to be flushed
// through it: a descriptor replaced while a flush is pending is closed by
// the last flush.
type handle struct {
	f    *os.File
	fd   int
	refs atomic.Int32 // one for being current, one per unflushed write or pending lock request
}

// NewAppender returns an Appender for path; the file (mode perm) is created
// by the first append if missing. Its directory must exist.
func NewAppender(path string, perm os.FileMode) *Appender {
	return &Appender{path: path, perm: perm}
}

// Close releases the descriptor; pending flushes still complete. A closed
// Appender reopens the file if used again.
func (a *Appender) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.retire()
}

// retire drops the current descriptor, closing it unless a flush still
// needs it. a.mu is held.
func (a *Appender) retire() error {
	h := a.cur
	a.cur = nil
	if h == nil {
		return nil
	}
	return h.release()
}

// release drops one reference; the last one closes the descriptor. It
// needs no lock, so a flush never waits for an append in progress.
func (h *handle) release() error {
	if h.refs.Add(-1) == 0 {
		return h.f.Close()
	}
	return nil
}

// Write appends line (without its newline) as one whole line and returns
// the function that makes it durable (with opt.Durable: fsync of the file,
// and of its directory when the file was new; otherwise it does nothing).
// The flush is called exactly once, and may run after the Appender's lock
// is released so that other writers need not wait for our fsync; a caller
// writing two files writes both, then flushes both. A path renamed over
// twice while we lock gives ErrReplaced (the caller retries); a write that
// failed for lack of room wraps ErrDiskFull. With opt.Unless found in the
// file, nothing is written and the flush does nothing.
func (a *Appender) Write(ctx context.Context, line []byte, opt AppendOptions) (flush func() error, err error) {
	rank := rankAcquire(a.path, true) // the file's lock, and a.mu that waits for it
	flush, err = a.write(ctx, line, opt)
	rank.release()
	return flush, err
}

// write is Write, while the lock-order checker counts the file's lock held.
func (a *Appender) write(ctx context.Context, line []byte, opt AppendOptions) (flush func() error, err error) {
	if bytes.IndexByte(line, '\n') >= 0 {
		return nil, errors.New("line contains a newline")
	}
	buf := make([]byte, len(line)+1)
	copy(buf, line)
	buf[len(line)] = '\n'

	a.mu.Lock()
	defer a.mu.Unlock()
	for attempt := 0; ; attempt++ {
		h, err := a.open()
		if err != nil {
			return nil, err
		}
		if err := a.lock(ctx, h); err != nil {
			return nil, err
		}
		held, same, err := a.check(h)
		if err == nil && same {
			size := held.Size()
			var wrote, mended bool
			wrote, mended, err = a.writeLocked(h, size, buf, opt)
			if wrote && !mended && opt.Changed != nil {
				if after, serr := h.f.Stat(); serr == nil {
					*opt.Changed = Change{Before: StampOf(held), After: StampOf(after)}
				}
			}
			flockRetry(h.fd, syscall.LOCK_UN)
			if err != nil || !wrote {
				return func() error { return nil }, err
			}
			h.refs.Add(1)
			return a.flusher(h, size == 0, opt.Durable), nil
		}
		flockRetry(h.fd, syscall.LOCK_UN)
		a.retire()
		if err != nil {
			return nil, err
		}
		if attempt == 1 {
			return nil, ErrReplaced
		}
	}
}

// open returns the current descriptor, opening the path if there is none.
func (a *Appender) open() (*handle, error) {
	if a.cur != nil {
		return a.cur, nil
	}
	f, err := OpenFile(a.path, os.O_RDWR|os.O_APPEND|os.O_CREATE, a.perm)
	if err != nil {
		return nil, err
	}
	a.cur = &handle{f: f, fd: int(f.Fd())}
	a.cur.refs.Store(1)
	return a.cur, nil
}

// check says whether the path still names the locked descriptor's inode
// (DESIGN section 4 rule 2), and returns what the descriptor's fstat says.
func (a *Appender) check(h *handle) (held os.FileInfo, same bool, err error) {
	held, err = h.f.Stat()
	if err != nil {
		return nil, false, err
	}
	now, err := os.Stat(a.path)
	if errors.Is(err, os.ErrNotExist) {
		return held, false, nil // removed: reopen creates it again
	}
	if err != nil {
		return nil, false, err
	}
	return held, os.SameFile(held, now), nil
}

// writeLocked writes buf at the end of the locked file of size bytes;
// mended says it first ended a torn last line.
func (a *Appender) writeLocked(h *handle, size int64, buf []byte, opt AppendOptions) (wrote, mended bool, err error) {
	if opt.Unless != nil {
		data := make([]byte, size)
		if _, err := h.f.ReadAt(data, 0); err != nil {
			return false, false, fmt.Errorf("read: %w", err)
		}
		if bytes.Contains(data, opt.Unless) {
			return false, false, nil
		}
	}
	if size > 0 {
		// Under the lock no write is in progress, so a last line without its
		// newline is what a writer that died left. End it, so that our line
		// stays a line of its own; readers then report the fragment as an
		// invalid line and doctor's repair quarantines it.
		var last [1]byte
		if _, err := h.f.ReadAt(last[:], size-1); err != nil {
			return false, false, fmt.Errorf("read last byte: %w", err)
		}
		if last[0] != '\n' {
			buf = append([]byte{'\n'}, buf...)
			mended = true
		}
	}
	if _, err := h.f.Write(buf); err != nil {
		// Short or failed: take back whatever part of the line landed, so
		// that the file ends where it ended before (rule 7).
		if terr := h.f.Truncate(size); terr != nil {
			err = fmt.Errorf("%w (and truncating back to %d bytes failed: %v)", err, size, terr)
		}
		return false, false, noRoom(err)
	}
	return true, mended, nil
}

// syncDir is SyncDir; a test counts its calls.
var syncDir = SyncDir

// flusher is the flush of one write through h.
func (a *Appender) flusher(h *handle, created, durable bool) func() error {
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() {
			if durable {
				// An fsync error means the data may be lost; never retry it
				// into success.
				if err = h.f.Sync(); err != nil {
					err = noRoom(err)
				} else if created {
					err = syncDir(filepath.Dir(a.path))
				}
			}
			if err != nil {
				rank := rankAcquire(a.path, true)
				a.mu.Lock()
				if a.cur == h {
					a.retire() // after a failed flush, start the next append afresh
				}
				a.mu.Unlock()
				rank.release()
			}
			h.release()
		})
		return err
	}
}

// lock takes the exclusive flock of h's descriptor, waiting as long as the
// holder needs but no longer than ctx allows (gofrs/flock locks only
// descriptors it opens itself; an Appender locks the one it holds). The
// uncontended case is one non-blocking flock(2); a contended one blocks in
// flock(2) in a goroutine. If ctx ends first, the descriptor is dropped
// (kept open until the late request is answered, then closed), so a lock
// granted late can never be taken for a later append's. a.mu is held.
func (a *Appender) lock(ctx context.Context, h *handle) error {
	err := flockRetry(h.fd, syscall.LOCK_EX|syscall.LOCK_NB)
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		if err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- flockRetry(h.fd, syscall.LOCK_EX) }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		return nil
	case <-ctx.Done():
		h.refs.Add(1) // the pending request's
		a.retire()
		go func() {
			if <-done == nil {
				flockRetry(h.fd, syscall.LOCK_UN)
			}
			h.release()
		}()
		return ctx.Err()
	}
}

func flockRetry(fd, how int) error {
	for {
		err := syscall.Flock(fd, how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// Appenders keeps one Appender per file a process appends to, so that an
// append reuses an open descriptor instead of opening the file twice.
// Bounded: past appendersMax files it starts over (a closed Appender in use
// elsewhere simply reopens its file). The zero Appenders is ready to use.
type Appenders struct {
	mu sync.Mutex
	m  map[string]*Appender
}

const appendersMax = 64

// Get returns the Appender of path, creating it (files it creates get perm).
func (c *Appenders) Get(path string, perm os.FileMode) *Appender {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a := c.m[path]; a != nil {
		return a
	}
	if c.m == nil || len(c.m) >= appendersMax {
		for _, a := range c.m {
			// Not here: Close waits for an append in progress, which may
			// wait for another process's lock; nobody else should.
			go a.Close()
		}
		c.m = map[string]*Appender{}
	}
	a := NewAppender(path, perm)
	c.m[path] = a
	return a
}
