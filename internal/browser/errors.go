package browser

import "errors"

// ErrMissing says no Chromium is on PATH.
var ErrMissing = errors.New("no chromium on PATH (chromium, chromium-browser or google-chrome)")
