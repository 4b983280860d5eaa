package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxLines is the most lines a file of the package may have: one file a
// target or a shared part, each small enough to read whole.
const maxLines = 500

// TestFileSizes fails on a file of the package (tests aside) over
// maxLines lines: split it, a target or a shared part a file.
func TestFileSizes(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		if n := bytes.Count(data, []byte("\n")); n > maxLines {
			t.Errorf("%s has %d lines, over %d: split it", f, n, maxLines)
		}
	}
	if checked == 0 {
		t.Fatal("no source files found")
	}
}
