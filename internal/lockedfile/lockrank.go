package lockedfile

import (
	"fmt"
	"strings"
)

// Static lock ranking, in the spirit of the Go runtime's (runtime/lockrank.go):
// every lock aipm takes has a rank, and a lock may be waited for only while
// every lock the goroutine holds has a lower rank. Then no cycle of waits,
// within a process or between processes, can form: each wait in a cycle
// would be for a higher rank than the last. This package knows no ranks:
// a store registers the function that ranks the lock paths below its root
// (RankLocks). Built with the tag lockrank, every acquisition and release
// is recorded per goroutine and a wait out of order is reported
// (lockrank_on.go); without it, the hooks are empty (lockrank_off.go).
//
// What is recorded: Lock, TryLock and TryLockDir until their unlock; the
// file's own lock of an append (Appender.Write, with the Appender's mutex,
// which is held while it waits for the flock), of Update (a document's),
// of ReadLocked, RewriteKeeping and DropPrefix (a log's), and of
// ReadRecord, SwapRecord and a HeldRecord's Read and Swap (a record's,
// with the HeldRecord's mutex), while each runs. A lock taken
// without waiting (TryLock, TryLockDir) is not checked when taken (it
// cannot wait), but is held: what is waited for while it is held is
// checked against it. TryLockFile's lock must have a rank but is not
// held here: it is handed to a child process, which holds it, and only
// ever taken without waiting. Held and HeldDir only look.

// A Rank is a lock's place in the lock order.
type Rank struct {
	// Order: a lock may be waited for only while every lock held has a
	// lower Order (two locks of one Order never nest: no code needs them
	// to, and nothing would order them). 0 is no rank: a lock below a
	// ranked root without one is reported.
	Order int
	// Name is the lock's class, as a report names it.
	Name string
}

func (r Rank) String() string {
	if r.Order == 0 {
		return "no rank"
	}
	return fmt.Sprintf("%s, rank %d", r.Name, r.Order)
}

// LockOrderError is a report of the checker: Taking was waited for while
// Held was held, out of the lock order (or Taking has no rank: Held is
// then empty).
type LockOrderError struct {
	Taking, Held HeldLock
}

// HeldLock is one lock of a report: its path, rank and where it was taken.
type HeldLock struct {
	Path  string
	Rank  Rank
	Stack string
}

func (e *LockOrderError) Error() string {
	var b strings.Builder
	if e.Held.Path == "" {
		fmt.Fprintf(&b, "lock order: %s (%s) has no rank: give its class one in the lock order of its store\n", e.Taking.Path, e.Taking.Rank)
	} else {
		fmt.Fprintf(&b, "lock order violation: waiting for %s (%s) while holding %s (%s): a lock is waited for only while every lock held ranks lower\n",
			e.Taking.Path, e.Taking.Rank, e.Held.Path, e.Held.Rank)
	}
	fmt.Fprintf(&b, "\n%s taken at:\n%s", e.Taking.Path, e.Taking.Stack)
	if e.Held.Path != "" {
		fmt.Fprintf(&b, "\n%s held since:\n%s", e.Held.Path, e.Held.Stack)
	}
	return b.String()
}
