package clientconfig

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAipmCommand: "aipm" when an aipm is on PATH, whichever it is;
// else this binary's absolute path, with a warning.
func TestAipmCommand(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "aipm"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if got := AipmCommand(dir, &stderr); got != "aipm" {
		t.Errorf("with an aipm on PATH: command %q, want aipm", got)
	}
	if !strings.Contains(stderr.String(), "is not this binary") {
		t.Errorf("another aipm on PATH: no warning in %q", stderr.String())
	}
	stderr.Reset()
	if got := AipmCommand("", &stderr); !filepath.IsAbs(got) {
		t.Errorf("with no aipm on PATH: command %q, want this binary's absolute path", got)
	}
	if !strings.Contains(stderr.String(), "aipm: warning: ") {
		t.Errorf("no aipm on PATH: no warning in %q", stderr.String())
	}
}
