package main

import (
	"os"
	"path/filepath"
)

// The aipm binary itself: where PATH finds it, and whether two paths name
// one file (mcp-config's entry, the demo's agents).

// lookPath is exec.LookPath over the given PATH value: the first regular,
// executable file called name.
func lookPath(path, name string) string {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// sameFile says whether paths a and b name one existing file.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}
