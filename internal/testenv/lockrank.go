package testenv

import "testing"

// LockRank says whether this test binary was built with the tag lockrank,
// which makes internal/lockedfile check every lock taken against the lock
// order (fsstore/internal/storage/lockorder.go).
const LockRank = lockRank

// SkipWithoutLockRank skips t, a test of the lock-order checker itself,
// when the test binary was built without it.
func SkipWithoutLockRank(t testing.TB) {
	t.Helper()
	if !LockRank {
		t.Skip("skipped: built without the lock-order checker; run go test -tags lockrank")
	}
}

// GoBuildFlags are the flags a test passes to go build for a binary it
// runs, so that the binary checks what the test binary checks: -tags
// lockrank when this one was built with it.
func GoBuildFlags() []string {
	if LockRank {
		return []string{"-tags", "lockrank"}
	}
	return nil
}
