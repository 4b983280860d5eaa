//go:build !linux

package lockedfile

import (
	"os"
	"path/filepath"
)

// ReadDirInodes lists the names in dir with their inode numbers (a stat
// per name where the directory's own records are not read directly).
func ReadDirInodes(dir string) (map[string]uint64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make(map[string]uint64, len(entries))
	for _, e := range entries {
		if fi, err := os.Lstat(filepath.Join(dir, e.Name())); err == nil {
			out[e.Name()] = Inode(fi)
		}
	}
	return out, nil
}
