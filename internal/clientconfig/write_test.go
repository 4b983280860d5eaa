package clientconfig

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWriteChanges: every changed file is written or none. A file whose
// temporary copy cannot be made (its directory is a file), or that cannot
// be renamed into place (a directory stands there), leaves the files
// before it as they were: an existing one byte for byte, with its mode, a
// created one and the directory made for it gone, and no temporary file
// behind. Both obstacles stop root too.
func TestWriteChanges(t *testing.T) {
	for name, tc := range map[string]struct {
		obstacle func(t *testing.T, dir string) FileChange
		wantErr  string
	}{
		"its directory is a file": {
			obstacle: func(t *testing.T, dir string) FileChange {
				writeFile(t, filepath.Join(dir, "blocker"), "a file, not a directory", 0o644)
				return changeOf(dir, filepath.Join("blocker", "x.json"), nil, "new")
			},
			wantErr: "blocker/x.json cannot be written (its directory cannot be made: not a directory), so no file was changed",
		},
		"a directory stands in its place": {
			obstacle: func(t *testing.T, dir string) FileChange {
				if err := os.MkdirAll(filepath.Join(dir, "taken", "inside"), 0o755); err != nil {
					t.Fatal(err)
				}
				return changeOf(dir, "taken", nil, "new")
			},
			wantErr: "), so what was already written (made/new.json, old.json) was put back as it was",
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "old.json"), "old\n", 0o600)
			changes := []FileChange{
				changeOf(dir, "old.json", []byte("old\n"), "new\n"),
				changeOf(dir, filepath.Join("made", "new.json"), nil, "new\n"),
				tc.obstacle(t, dir),
			}
			before := listTree(t, dir)
			err := writeChanges(changes)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), changes[2].name+" cannot be") {
				t.Fatalf("writeChanges: %v, want an error with %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), dir) {
				t.Errorf("the error names this machine's path: %v", err)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "old.json")); string(got) != "old\n" {
				t.Errorf("old.json holds %q after the failed write, want it as it was", got)
			}
			if fi, err := os.Stat(filepath.Join(dir, "old.json")); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("old.json: %v, mode %v; want 0600 kept", err, fi.Mode().Perm())
			}
			if after := listTree(t, dir); !slices.Equal(after, before) {
				t.Errorf("the tree changed:\nbefore %q\nafter  %q", before, after)
			}
		})
	}
	t.Run("all written", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "old.json"), "old\n", 0o600)
		changes := []FileChange{
			changeOf(dir, "old.json", []byte("old\n"), "new\n"),
			changeOf(dir, filepath.Join("made", "new.json"), nil, "new\n"),
			{path: filepath.Join(dir, "same.json"), name: "same.json"}, // unchanged: not written
		}
		if err := writeChanges(changes); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"old.json", filepath.Join("made", "new.json")} {
			if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != "new\n" {
				t.Errorf("%s: %q, %v; want the new content", name, got, err)
			}
		}
		if fi, err := os.Stat(filepath.Join(dir, "old.json")); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("old.json's mode was not kept: %v", err)
		}
		want := []string{"made/", "made/new.json", "old.json"}
		if got := listTree(t, dir); !slices.Equal(got, want) {
			t.Errorf("tree %q, want %q (no temporary file, no unchanged file written)", got, want)
		}
	})
}

// changeOf is the change of the file name under dir to data; old is its
// content now (nil when it does not exist).
func changeOf(dir, name string, old []byte, data string) FileChange {
	return FileChange{path: filepath.Join(dir, name), name: filepath.ToSlash(name), created: old == nil, what: "changed", old: old, data: []byte(data)}
}

func writeFile(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

// listTree is every path under dir, relative, a directory with a final /.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var paths []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			rel += "/"
		}
		paths = append(paths, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return paths
}
