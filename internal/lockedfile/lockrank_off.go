//go:build !lockrank

package lockedfile

// LockRankChecked says whether this binary checks the lock order (built
// with the tag lockrank).
const LockRankChecked = false

// RankLocks makes rank the ranking of every lock at or below root; without
// the tag lockrank nothing checks the order, and it does nothing.
func RankLocks(root string, rank func(path string) Rank) {}

// OnLockOrderViolation makes fn receive the checker's reports instead of a
// panic until restore; without the tag lockrank there are none.
func OnLockOrderViolation(fn func(*LockOrderError)) (restore func()) { return func() {} }

// heldLock is nothing without the checker: the hooks below cost nothing.
type heldLock struct{}

func rankAcquire(path string, wait bool) heldLock { return heldLock{} }
func rankKnown(path string)                       {}
func (heldLock) release()                         {}
