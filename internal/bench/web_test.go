package bench

import (
	"slices"
	"testing"

	"aipm/internal/browser"
)

// TestNoBrowser: a P9 row without Chromium says so where its measurement
// would be, and is not met.
func TestNoBrowser(t *testing.T) {
	got := noBrowser("P9a", "file append -> DOM updated", "p99 <= 100 ms").Cells()
	want := []string{"P9a", "file append -> DOM updated", "not measured: " + browser.ErrMissing.Error(), "-", "-", "p99 <= 100 ms", "NO", "-"}
	if !slices.Equal(got, want) {
		t.Errorf("cells %q, want %q", got, want)
	}
}
