package launch

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"aipm/internal/clients"
)

// TestClearOwned: a folder a run owns keeps only the run's files (a
// policy an earlier run or the agent left there is gone, a folder in it
// too); a folder not made yet is no error; a folder not owned is left
// alone.
func TestClearOwned(t *testing.T) {
	dir := t.TempDir()
	owned, other := filepath.Join(dir, "policies"), filepath.Join(dir, "other")
	for _, p := range []string{filepath.Join(owned, "aipm.toml"), filepath.Join(owned, "planted.toml"), filepath.Join(owned, "sub", "x.toml"), filepath.Join(other, "keep.toml")} {
		os.MkdirAll(filepath.Dir(p), 0o700)
		os.WriteFile(p, []byte("x"), 0o600)
	}
	files := []clients.File{{Path: filepath.Join(owned, "aipm.toml")}}
	if err := clearOwned([]string{owned, filepath.Join(dir, "not-made")}, files); err != nil {
		t.Fatal(err)
	}
	names := func(d string) []string {
		entries, _ := os.ReadDir(d)
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	if got := names(owned); !slices.Equal(got, []string{"aipm.toml"}) {
		t.Errorf("owned folder after clearOwned: %q, want only aipm.toml", got)
	}
	if got := names(other); !slices.Equal(got, []string{"keep.toml"}) {
		t.Errorf("a folder not owned: %q, want it untouched", got)
	}
}
