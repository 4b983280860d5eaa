//go:build lockrank

package lockedfile

import (
	"bytes"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// LockRankChecked says whether this binary checks the lock order (built
// with the tag lockrank).
const LockRankChecked = true

// rankers are the registered ranking functions, by root (RankLocks).
var rankers sync.Map // string -> func(string) Rank

// RankLocks makes rank the ranking of every lock at or below root.
func RankLocks(root string, rank func(path string) Rank) {
	rankers.Store(filepath.Clean(root), rank)
}

// report is what a violation does: panic, unless a test replaced it.
var report atomic.Pointer[func(*LockOrderError)]

// OnLockOrderViolation makes fn, instead of a panic, receive every report
// of the checker until restore is called: for a test that shows a report.
func OnLockOrderViolation(fn func(*LockOrderError)) (restore func()) {
	old := report.Swap(&fn)
	return func() { report.Store(old) }
}

func reportViolation(e *LockOrderError) {
	if fn := report.Load(); fn != nil {
		(*fn)(e)
		return
	}
	panic(e.Error())
}

// heldLock is one lock a goroutine holds (or waits for).
type heldLock struct {
	gid  uint64
	path string
	rank Rank
	pcs  []uintptr
}

// holding are the locks each goroutine holds, in the order taken.
var holding struct {
	sync.Mutex
	by map[uint64][]*heldLock
}

// rankOf is the rank of the lock at path; ranked is false when no
// registered root holds path (a lock the checker knows nothing of).
func rankOf(path string) (r Rank, ranked bool) {
	path = filepath.Clean(path)
	for dir := path; ; {
		if fn, ok := rankers.Load(dir); ok {
			return fn.(func(string) Rank)(path), true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return Rank{}, false
		}
		dir = parent
	}
}

// rankAcquire records that this goroutine takes the lock at path, and with
// wait (it may wait for it) first checks it against every lock it holds.
// The caller calls release when it lets go of the lock, or gives up taking
// it.
func rankAcquire(path string, wait bool) *heldLock {
	r, ranked := rankOf(path)
	if !ranked {
		return nil
	}
	h := &heldLock{gid: goid(), path: path, rank: r, pcs: callers()}
	if r.Order == 0 {
		reportViolation(&LockOrderError{Taking: h.info()})
		return nil
	}
	if wait {
		if bad := h.outOfOrder(); bad != nil {
			reportViolation(&LockOrderError{Taking: h.info(), Held: bad.info()})
		}
	}
	holding.Lock()
	if holding.by == nil {
		holding.by = map[uint64][]*heldLock{}
	}
	holding.by[h.gid] = append(holding.by[h.gid], h)
	holding.Unlock()
	return h
}

// outOfOrder is a lock h's goroutine holds that forbids waiting for h:
// one of the same or a higher rank.
func (h *heldLock) outOfOrder() *heldLock {
	holding.Lock()
	defer holding.Unlock()
	for _, o := range holding.by[h.gid] {
		if o.rank.Order >= h.rank.Order {
			return o
		}
	}
	return nil
}

// rankKnown checks that the lock at path has a rank, without holding it.
func rankKnown(path string) {
	rankAcquire(path, false).release()
}

// release records that the goroutine that took h no longer holds it.
func (h *heldLock) release() {
	if h == nil {
		return
	}
	holding.Lock()
	defer holding.Unlock()
	list := holding.by[h.gid]
	for i, o := range list {
		if o == h {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(holding.by, h.gid)
	} else {
		holding.by[h.gid] = list
	}
}

func (h *heldLock) info() HeldLock {
	var b strings.Builder
	frames := runtime.CallersFrames(h.pcs)
	for {
		f, more := frames.Next()
		if f.Function != "" {
			b.WriteString(f.Function + "\n\t" + f.File + ":" + strconv.Itoa(f.Line) + "\n")
		}
		if !more {
			break
		}
	}
	return HeldLock{Path: h.path, Rank: h.rank, Stack: b.String()}
}

// callers are the program counters of the lockedfile function that takes
// a lock and of its callers.
func callers() []uintptr {
	pcs := make([]uintptr, 32)
	return pcs[:runtime.Callers(3, pcs)]
}

// goid is the id of the calling goroutine, read from its stack's header
// ("goroutine 18 [running]:").
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		panic("lock order: cannot read the goroutine id: " + err.Error())
	}
	return id
}
