//go:build !linux

package lockedfile

import (
	"os"
	"path/filepath"
)

// ReadDirInodes calls fn with each name in dir and its inode number (a
// stat per name where the directory's own records are not read directly).
// The name is only valid during the call.
func ReadDirInodes(dir string, fn func(name []byte, ino uint64)) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if fi, err := os.Lstat(filepath.Join(dir, e.Name())); err == nil {
			fn([]byte(e.Name()), Inode(fi))
		}
	}
	return nil
}
