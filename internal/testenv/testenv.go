// Package testenv is the one way a test of aipm may skip: because the
// machine it runs on lacks something the test needs, named in the reason,
// because the runner asked for a short run (go test -short), or because
// the test binary was built without the lock-order checker a test is
// about (go test -tags lockrank, as the README runs it). A test
// that skips for any other reason hides a failure, as one that skipped for
// months once did; TestNoOtherSkips fails on every other skip in the
// repository's tests and testscripts.
package testenv

import "testing"

// SkipMissing skips t because this machine lacks what: a tool, a file
// system feature, a permission ("FIFOs (mkfifo: operation not permitted)").
func SkipMissing(t testing.TB, what string) {
	t.Helper()
	if what == "" {
		t.Fatal("testenv.SkipMissing: name what this machine lacks")
	}
	t.Skipf("skipped: this machine lacks %s", what)
}

// SkipIfShort skips t when go test runs with -short; cost says what makes
// the test too long for a short run ("starts many processes").
func SkipIfShort(t testing.TB, cost string) {
	t.Helper()
	if cost == "" {
		t.Fatal("testenv.SkipIfShort: say what makes the test long")
	}
	if testing.Short() {
		t.Skipf("skipped with -short: %s", cost)
	}
}
