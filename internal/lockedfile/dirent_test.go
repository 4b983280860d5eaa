package lockedfile

import (
	"maps"
	"os"
	"path/filepath"
	"testing"
)

// ReadDirInodes gives each name of a directory once, with the inode a stat
// of it gives (a file replaced by a rename has the new one), and neither
// "." nor "..".
func TestReadDirInodes(t *testing.T) {
	tests := []struct {
		name    string
		files   []string
		renamed map[string]string // from: to, after the files are written
	}{
		{name: "empty"},
		{name: "files", files: []string{"a.json", "b.json", ".hidden", "a-much-longer-name-than-the-others.json"}},
		{name: "one replaced by a rename", files: []string{"a.json", "b.json", "b.json.tmp"}, renamed: map[string]string{"b.json.tmp": "b.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for from, to := range tt.renamed {
				if err := os.Rename(filepath.Join(dir, from), filepath.Join(dir, to)); err != nil {
					t.Fatal(err)
				}
			}
			want := map[string]uint64{}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				fi, err := os.Lstat(filepath.Join(dir, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				want[e.Name()] = Inode(fi)
			}
			got := map[string]uint64{}
			err = ReadDirInodes(dir, func(name []byte, ino uint64) {
				if _, dup := got[string(name)]; dup {
					t.Errorf("%q given twice", name)
				}
				got[string(name)] = ino
			})
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, want) {
				t.Errorf("ReadDirInodes gave %v, want %v", got, want)
			}
		})
	}
	if err := ReadDirInodes(filepath.Join(t.TempDir(), "missing"), func([]byte, uint64) {}); !os.IsNotExist(err) {
		t.Errorf("a missing directory: %v, want not exist", err)
	}
}
