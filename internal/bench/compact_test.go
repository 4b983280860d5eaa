package bench

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDirSize: the bytes of the files under a directory, in every
// subdirectory; a missing directory is an error.
func TestDirSize(t *testing.T) {
	dir := t.TempDir()
	for path, size := range map[string]int{"a": 3, "sub/b": 5, "sub/deeper/c": 7, "empty": 0} {
		path = filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := dirSize(dir); n != 15 || err != nil {
		t.Errorf("dirSize = %d, %v, want 15", n, err)
	}
	if _, err := dirSize(filepath.Join(dir, "missing")); err == nil {
		t.Error("dirSize of a missing directory: no error")
	}
}
