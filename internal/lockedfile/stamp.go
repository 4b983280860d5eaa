package lockedfile

import (
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Stamp identifies one version of a file well enough to reuse what was
// read from it: a rename-replace gives a new inode, an edit in place a new
// size or modification time.
type Stamp struct {
	Ino   uint64
	Size  int64
	MTime time.Time
}

// StampOf is fi's stamp.
func StampOf(fi os.FileInfo) Stamp {
	return Stamp{Ino: Inode(fi), Size: fi.Size(), MTime: fi.ModTime()}
}

// StampPath stats path; a missing file has the zero stamp.
func StampPath(path string) (Stamp, error) {
	fi, err := os.Stat(path)
	if os.IsNotExist(err) {
		return Stamp{}, nil
	}
	if err != nil {
		return Stamp{}, err
	}
	return StampOf(fi), nil
}

// Racy says whether a modification time read at readAt is too recent to
// prove that nothing changed since: file systems stamp times with a coarse
// clock, so two changes within one tick share a time (git's "racy clean"
// problem), and a file replaced by rename can get back an inode number it
// had a moment ago (ext4 hands out the one just freed), so two versions of
// the same size can share a whole stamp. Linux's native file systems stamp
// nanoseconds from the kernel's coarse clock, whose tick is at most 10 ms
// (HZ=100) and which lags the clock read here by up to a tick: a version
// read two ticks after its time cannot share it with a later one. A time
// with no nanoseconds is taken to come from a file system that stamps
// whole seconds (ext3, HFS+) or two (FAT).
func Racy(mtime, readAt time.Time) bool {
	window := 20 * time.Millisecond
	if mtime.Nanosecond() == 0 {
		window = 2 * time.Second
	}
	return readAt.Sub(mtime) < window
}

// later gives f, written to replace a version of its file whose
// modification time was prev, a modification time after prev: file
// systems stamp times with a coarse clock, and a rename-replace can get
// back an inode number its file had a moment ago (ext4 hands out the one
// just freed), so without it two versions of the same size written within
// one tick could share a whole stamp. Every writer here that replaces a
// file (WriteAtomic, DropPrefix) calls it before its fsync, so that a path
// they keep never shows one stamp for two versions: what StatCache.Put
// relies on. A time is set a step after prev that the file system keeps
// (it may round: 100 ns on NTFS, 10 ms on exFAT, 2 s on FAT). Where none
// can be set, the write goes on and this process's StatCache.Put keeps
// nothing from then on. A zero prev (no file to replace) asks nothing, and
// so does one more than a second ahead of the clock (set by hand or by a
// clock stepped back): the clock's own time then differs from it.
func later(f *os.File, prev time.Time) error {
	if prev.IsZero() || prev.After(time.Now().Add(time.Second)) {
		return nil
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.ModTime().After(prev) {
		return nil
	}
	for _, step := range []time.Duration{time.Nanosecond, time.Microsecond, 10 * time.Millisecond, time.Second, 2 * time.Second} {
		if os.Chtimes(f.Name(), time.Time{}, prev.Truncate(step).Add(step)) != nil {
			break
		}
		if fi, err := f.Stat(); err == nil && fi.ModTime().After(prev) {
			return nil
		}
	}
	stampsUnsure.Store(true)
	return nil
}

// stampsUnsure says later could not set a time on some file: Put then
// keeps nothing in this process.
var stampsUnsure atomic.Bool

// StatCache keeps values decoded from files, each valid while the stamps it
// was read under still describe the files: one stat per file revalidates
// an entry instead of a read and a decode.
type StatCache[V any] struct {
	mu sync.Mutex
	m  map[string]stamped[V]
}

type stamped[V any] struct {
	stamps []Stamp
	v      V
}

const statCacheMax = 4096 // entries; past it the cache starts over

// Get returns the value kept for key if stamps still describe its files.
func (c *StatCache[V]) Get(key string, stamps ...Stamp) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || len(e.stamps) != len(stamps) {
		var zero V
		return zero, false
	}
	for i := range stamps {
		if stamps[i] != e.stamps[i] {
			var zero V
			return zero, false
		}
	}
	return e.v, true
}

// Put keeps v for key, valid while stamps (taken before v was read)
// describe its files. The files must be ones whose every new version has a
// new stamp: those this package writes (an append grows its file,
// WriteAtomic and DropPrefix make a replacement later than what it
// replaces), and that are not removed and made again. For any other file
// (a directory, a file people edit, one removed and written again) use
// PutSeen. A stamp without nanoseconds comes from a file system that
// stamps whole seconds (ext3, HFS+) or two (FAT): then, and once later has
// failed in this process, nothing is kept, and what was kept for key is
// dropped.
func (c *StatCache[V]) Put(key string, v V, stamps ...Stamp) {
	c.put(key, v, func(st Stamp) bool { return st.MTime.Nanosecond() == 0 || stampsUnsure.Load() }, stamps)
}

// PutSeen is Put for files others change too: nothing is kept, and what
// was kept for key is dropped, if one of stamps is Racy at seen, the time
// taken before the stats.
func (c *StatCache[V]) PutSeen(key string, v V, seen time.Time, stamps ...Stamp) {
	c.put(key, v, func(st Stamp) bool { return Racy(st.MTime, seen) }, stamps)
}

// put keeps v for key unless unsure says a stamp (not a missing file's)
// may be shared by a later version.
func (c *StatCache[V]) put(key string, v V, unsure func(Stamp) bool, stamps []Stamp) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range stamps {
		if st != (Stamp{}) && unsure(st) {
			delete(c.m, key)
			return
		}
	}
	if c.m == nil || len(c.m) >= statCacheMax {
		c.m = map[string]stamped[V]{}
	}
	c.m[key] = stamped[V]{stamps: stamps, v: v}
}

// Drop forgets what was kept for key: its files will not be read for it
// again (a session that ended), so it would only take room.
func (c *StatCache[V]) Drop(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}

// DropPrefix is Drop of every key that starts with prefix.
func (c *StatCache[V]) DropPrefix(prefix string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key := range c.m {
		if strings.HasPrefix(key, prefix) {
			delete(c.m, key)
		}
	}
}

// Moved declares every entry that holds stamp from valid at to instead:
// the file changed from one to the other in a way the caller knows leaves
// those values true (its own append of a line they do not depend on,
// seen under the file's lock: Change): the caller saw, under the lock,
// every byte that went from one stamp to the other, and a line appended
// by anyone after it changes the size.
func (c *StatCache[V]) Moved(from, to Stamp) {
	if from == (Stamp{}) || from == to {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, e := range c.m {
		if i := slices.Index(e.stamps, from); i >= 0 {
			stamps := slices.Clone(e.stamps)
			stamps[i] = to
			c.m[key] = stamped[V]{stamps: stamps, v: e.v}
		}
	}
}
