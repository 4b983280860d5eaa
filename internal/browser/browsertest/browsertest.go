// Package browsertest starts the headless Chromium of package browser for
// a test: the test skips (through testenv) when the machine has none.
package browsertest

import (
	"context"
	"errors"
	"testing"

	"aipm/internal/browser"
	"aipm/internal/testenv"
)

// Start starts a browser that closes when t ends; t skips when no
// Chromium is on PATH.
func Start(t testing.TB) *browser.Browser {
	t.Helper()
	b, err := browser.Start(context.Background())
	if errors.Is(err, browser.ErrMissing) {
		testenv.SkipMissing(t, "chromium (or chromium-browser, google-chrome) on PATH")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return b
}

// Tab opens a tab of b that closes when t ends.
func Tab(t testing.TB, ctx context.Context, b *browser.Browser) *browser.Tab {
	t.Helper()
	tab, err := b.NewTab(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tab.Close)
	return tab
}
