package lockedfile

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Spare files: on the filesystem aipm was measured on, giving a new inode
// its first name (open with O_CREAT, or linkat of an O_TMPFILE) costs 0.3
// to 0.9 ms, while renaming an existing file costs 0.03 ms. Every atomic
// write of a document makes a temp file, so a durable document write cost
// about 1.2 ms, and authenticate, with two of them, much of aipm serve's
// time to its first answer (DESIGN section 13, P4). A spare pool is a
// directory of empty files made ahead, off that path: the next temp file
// under the pool's root takes one by a rename (createTemp), and the pool is
// filled again once the writes pause. A spare is a fresh inode that no
// document ever named, so no reader can hold it open; a name in the pool
// that is not a regular file with one link (put there by hand, or a crash
// that left two names) is never written through: it is removed, and the
// write makes its own file.

// sparesKept is how many spares a pool holds: more than the document
// writes of one tool call (authenticate makes three, a finished blocker's
// dependents one each).
const sparesKept = 8

type sparePool struct {
	dir   string
	empty atomic.Bool // the last take found none: none until this process fills it

	mu      sync.Mutex
	pending *time.Timer // the refill after the last take, not begun
}

// refillAfter is how long after its last take a pool is filled again: a
// file made while a write's fsync runs joins that fsync's journal commit
// and slows it, so the pool waits for the writes of a call to be over (a
// tool call's are a few milliseconds apart at most).
const refillAfter = 10 * time.Millisecond

// pools are the spare pools by the root whose writes take from them.
var pools sync.Map // root -> *sparePool

// UseSpares makes the temp files of writes anywhere below root take their
// inode from the spare pool dir (made, 0700, when it is first filled):
// dir must be on root's filesystem (else each write falls back to making
// its own file) and be a directory nothing else writes to. The pool is
// filled in the background once its writes pause (refillAfter); the
// function returned fills it now and waits, so that a process can leave
// its pool filled when it exits (a spare half made is an empty file: a
// spare still).
func UseSpares(root, dir string) (fill func()) {
	pools.LoadOrStore(filepath.Clean(root), &sparePool{dir: filepath.Clean(dir)})
	poolsInUse.Store(true)
	return fillAll
}

// fillAll fills every pool whose refill is due, now, and waits for the
// refills running.
func fillAll() {
	pools.Range(func(_, p any) bool {
		if p := p.(*sparePool); p.claim() {
			go p.fill()
		}
		return true
	})
	refills.Wait()
}

// refills are the pools' refills running.
var refills sync.WaitGroup

// poolFor is the pool of the nearest root above dir, or nil.
func poolFor(dir string) *sparePool {
	if !poolsInUse.Load() {
		return nil
	}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if p, ok := pools.Load(d); ok {
			return p.(*sparePool)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// poolsInUse says whether UseSpares was ever called: a process without a
// pool pays for no lookup.
var poolsInUse atomic.Bool

// take moves a spare to the new name path (which must not exist) and
// opens it for writing, emptied; ok is false when the pool has none fit
// to take, and the caller makes its own file. Either way the pool is
// topped up in the background.
func (p *sparePool) take(path string) (f *os.File, ok bool) {
	defer p.refill()
	if p.empty.Load() {
		return nil, false // a busy process makes its files, as without a pool
	}
	for n := range sparesKept {
		spare := filepath.Join(p.dir, strconv.Itoa(n))
		if err := renameNoReplace(spare, path); err != nil {
			continue // taken by another writer, never made, or not ours to move
		}
		if f, err := openSpare(path); err == nil {
			return f, true
		}
		os.Remove(path) // what we moved is not a fresh spare: not ours to write
	}
	p.empty.Store(true)
	return nil, false
}

// openSpare opens a spare that take moved to path: a regular file with one
// link, emptied.
func openSpare(path string) (*os.File, error) {
	f, err := openRegular(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Nlink != 1 {
			err = ErrNotRegular
		}
	}
	if err == nil {
		err = f.Truncate(0)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// refill schedules the pool's refill refillAfter from now, or later if
// it was scheduled already.
func (p *sparePool) refill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending != nil {
		p.pending.Reset(refillAfter)
		return
	}
	p.pending = time.AfterFunc(refillAfter, func() {
		if p.claim() {
			p.fill()
		}
	})
}

// claim takes the pool's pending refill, and says whether there was one:
// its filling is then the caller's, counted in refills already (under the
// lock, so that fillAll's wait cannot miss it).
func (p *sparePool) claim() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending == nil {
		return false
	}
	p.pending.Stop()
	p.pending = nil
	refills.Add(1)
	return true
}

// fill makes the pool's missing spares; refills counts it.
func (p *sparePool) fill() {
	defer refills.Done()
	defer p.empty.Store(false)
	if err := os.Mkdir(p.dir, 0o700); err == nil {
		// Whatever the umask; and nothing in the pool is anyone's to
		// keep: out of git, by a .gitignore of its own.
		os.Chmod(p.dir, 0o700)
		os.WriteFile(filepath.Join(p.dir, ".gitignore"), []byte("*\n"), 0o600)
	} else if !errors.Is(err, os.ErrExist) {
		return
	}
	for n := range sparesKept {
		fd, err := syscall.Open(filepath.Join(p.dir, strconv.Itoa(n)), syscall.O_RDWR|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0o600)
		if err == nil {
			syscall.Close(fd)
		}
	}
}

// tempName is a new name for a temp file in dir.
func tempName(dir, prefix string) string {
	return filepath.Join(dir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10))
}
