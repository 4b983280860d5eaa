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
)

// Spare files: on the filesystem aipm was measured on, giving a new inode
// its first name (open with O_CREAT, or linkat of an O_TMPFILE) costs 0.3
// to 0.9 ms, while renaming an existing file costs 0.03 ms. Every atomic
// write of a document makes a temp file, so a durable document write cost
// about 1.2 ms, and authenticate, with two of them, much of aipm serve's
// time to its first answer (DESIGN section 13, P4). A spare pool is a
// directory of empty files made ahead, off that path: the next temp file
// under the pool's root takes one by a rename (createTemp), a write that
// cannot finish gives it back, and the process fills the pool as it ends.
// A spare is a fresh inode that no document ever named, so no reader can
// hold it open; a name in the pool that is not an empty regular file with
// one link (put there by hand, or a crash that left two names) is never
// moved nor written through, and the write makes its own file.

// sparesKept is how many spares a pool holds: more than the document
// writes of an aipm serve's start (authenticate makes two or three).
const sparesKept = 8

type sparePool struct {
	dir      string
	empty    atomic.Bool // the last take found none: none until this process fills it
	disabled atomic.Bool // the system cannot move a spare into place (another filesystem, no renameat2)
	due      atomic.Bool // a take was tried: the pool is filled when the process ends (fillAll)

	filling sync.Mutex // held by the one fill at a time
}

// pools are the spare pools by the root whose writes take from them.
var pools sync.Map // root -> *sparePool

// UseSpares makes the temp files of writes anywhere below root take their
// inode from the spare pool dir (made, 0700, when it is first filled):
// dir must be a directory of root's filesystem that nothing else writes
// to (anything else there is left alone, and the writes make their own
// files). The pool is filled by the function returned, which a process
// calls as it ends: so that nothing under root changes but by a write (a
// refused call changes no file, not even a spare), and the next process
// finds the pool filled (a spare half made is an empty file: a spare
// still). Where the system cannot move a file without replacing another
// (renameat2), there is no pool.
func UseSpares(root, dir string) (fill func()) {
	if !sparesSupported {
		return func() {}
	}
	pools.LoadOrStore(filepath.Clean(root), &sparePool{dir: filepath.Clean(dir)})
	poolsInUse.Store(true)
	return fillAll
}

// fillAll fills every pool a take was tried in.
func fillAll() {
	pools.Range(func(_, p any) bool {
		if p := p.(*sparePool); p.due.CompareAndSwap(true, false) {
			p.filling.Lock()
			p.fill()
			p.filling.Unlock()
		}
		return true
	})
}

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
// opens it for writing; ok is false when the pool has none fit to take,
// and the caller makes its own file. Either way the pool is due to be
// filled.
func (p *sparePool) take(path string) (f *os.File, ok bool) {
	if p.disabled.Load() {
		return nil, false
	}
	p.due.Store(true)
	if p.empty.Load() || !p.isDir() {
		return nil, false // a busy process makes its files, as without a pool
	}
	for n := range sparesKept {
		spare := filepath.Join(p.dir, strconv.Itoa(n))
		if !isSpare(spare) {
			continue // taken by another writer, never made, or not a spare: left alone
		}
		if err := renameNoReplace(spare, path); err != nil {
			if errors.Is(err, syscall.EXDEV) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EOPNOTSUPP) {
				p.disabled.Store(true)
				return nil, false
			}
			continue
		}
		if f, err := openSpare(path); err == nil {
			taken.Store(path, spare)
			return f, true
		}
		if renameNoReplace(path, spare) != nil { // changed between the look and the move: put it back
			os.Remove(path)
		}
	}
	p.empty.Store(true)
	return nil, false
}

// isDir says whether the pool's directory is one, not a symbolic link.
func (p *sparePool) isDir() bool {
	fi, err := os.Lstat(p.dir)
	return err == nil && fi.IsDir()
}

// isSpare says whether path is a spare: an empty regular file with one
// link (not a link, a directory, a file someone wrote, or a second name).
func isSpare(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink == 1
}

// openSpare opens the spare take moved to path, if it still is one.
func openSpare(path string) (*os.File, error) {
	f, err := openRegular(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Nlink != 1 || fi.Size() != 0 {
			err = ErrNotRegular
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// taken are the temp files this process made from spares and has not
// put in place yet, by name: the pool slot each came from.
var taken sync.Map // temp file name -> its slot's name

// removeTemp removes the temp file name, which a write could not finish
// or put in place (a full disk, a save that came first): one made from a
// spare goes back to its slot, emptied, so that a refused write leaves
// the pool as it was.
func removeTemp(name string) {
	if slot, ok := taken.LoadAndDelete(name); ok && os.Truncate(name, 0) == nil && renameNoReplace(name, slot.(string)) == nil {
		return
	}
	os.Remove(name)
}

// placed forgets the temp file name, now a document.
func placed(name string) {
	if poolsInUse.Load() {
		taken.Delete(name)
	}
}

// fill makes the pool's missing spares; the caller holds p.filling.
func (p *sparePool) fill() {
	defer p.empty.Store(false)
	if err := os.Mkdir(p.dir, 0o700); err == nil {
		os.Chmod(p.dir, 0o700) // whatever the umask
	} else if !errors.Is(err, os.ErrExist) || !p.isDir() {
		return
	}
	// Nothing in the pool is anyone's to keep: out of git, by a
	// .gitignore of its own.
	if ignore := filepath.Join(p.dir, ".gitignore"); !fileExists(ignore) {
		os.WriteFile(ignore, []byte("*\n"), 0o600)
	}
	for n := range sparesKept {
		fd, err := syscall.Open(filepath.Join(p.dir, strconv.Itoa(n)), syscall.O_RDWR|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0o600)
		if err == nil {
			syscall.Fchmod(fd, 0o600) // whatever the umask: the taker writes it
			syscall.Close(fd)
		}
	}
}

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// tempName is a new name for a temp file in dir.
func tempName(dir, prefix string) string {
	return filepath.Join(dir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10))
}
