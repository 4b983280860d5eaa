package lockedfile

import (
	"os"
	"slices"
	"sync"
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

// StatCache keeps values decoded from files, each valid while the stamps it
// was read under still describe the files: one stat per file revalidates
// an entry instead of a read and a decode. A value read from a file changed
// within Racy's window is not kept: the next use reads it again.
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

// Put keeps v for key, valid while stamps describe its files; unless one
// of them is Racy now (a missing file's zero stamp never is): then the
// entry kept for key, if any, is dropped.
func (c *StatCache[V]) Put(key string, v V, stamps ...Stamp) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range stamps {
		if st != (Stamp{}) && Racy(st.MTime, now) {
			delete(c.m, key)
			return
		}
	}
	if c.m == nil || len(c.m) >= statCacheMax {
		c.m = map[string]stamped[V]{}
	}
	c.m[key] = stamped[V]{stamps: stamps, v: v}
}

// Moved declares every entry that holds stamp from valid at to instead:
// the file changed from one to the other in a way the caller knows leaves
// those values true (its own append of a line they do not depend on,
// seen under the file's lock: Change). It is not held to Racy: the caller
// saw, under the lock, every byte that went from one stamp to the other,
// and a line appended by anyone after it changes the size.
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
