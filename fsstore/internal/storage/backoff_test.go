package storage

import (
	"testing"
	"time"
)

// The wait after n failures in a row: none for the first three, then
// doubling from one second, capped at five minutes.
func TestBackoffAfter(t *testing.T) {
	for n, want := range map[int]time.Duration{
		1: 0, 3: 0, 4: time.Second, 5: 2 * time.Second, 6: 4 * time.Second,
		12: 256 * time.Second, 13: 5 * time.Minute, 1000: 5 * time.Minute,
	} {
		if got := BackoffAfter(n); got != want {
			t.Errorf("BackoffAfter(%d) = %v, want %v", n, got, want)
		}
	}
}
