package fsstore

import (
	"os"
	"sync"
	"time"

	"aipm/fsstore/lockedfile"
)

// fileStamp identifies one version of a file well enough to reuse what was
// read from it: a rename-replace gives a new inode, an edit in place a new
// size or modification time.
type fileStamp struct {
	ino   uint64
	size  int64
	mtime time.Time
}

func stampOf(fi os.FileInfo) fileStamp {
	return fileStamp{ino: lockedfile.Inode(fi), size: fi.Size(), mtime: fi.ModTime()}
}

// stampPath stats path; a missing file has the zero stamp.
func stampPath(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if os.IsNotExist(err) {
		return fileStamp{}, nil
	}
	if err != nil {
		return fileStamp{}, err
	}
	return stampOf(fi), nil
}

// statCache keeps values decoded from files, each valid while the stamps it
// was read under still describe the files: one stat per file revalidates
// an entry instead of a read and a decode.
type statCache[V any] struct {
	mu sync.Mutex
	m  map[string]stamped[V]
}

type stamped[V any] struct {
	stamps []fileStamp
	v      V
}

const statCacheMax = 4096 // entries; past it the cache starts over

func (c *statCache[V]) get(key string, stamps ...fileStamp) (V, bool) {
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

func (c *statCache[V]) put(key string, v V, stamps ...fileStamp) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= statCacheMax {
		c.m = map[string]stamped[V]{}
	}
	c.m[key] = stamped[V]{stamps: stamps, v: v}
}
