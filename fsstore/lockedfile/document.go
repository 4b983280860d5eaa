package lockedfile

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ErrChanged says a document no longer is what was read: someone (an
// editor, say) replaced or rewrote it in between.
var ErrChanged = errors.New("changed since it was read")

// Identity is what a reader read of a document: its inode and a hash of its
// bytes. The zero Identity is "there was no file".
type Identity struct {
	Exists bool
	Ino    uint64
	Sum    [sha256.Size]byte
}

// ReadDoc reads the whole file at path on one descriptor and returns its
// bytes and identity. A missing file is an error wrapping os.ErrNotExist.
func ReadDoc(path string) ([]byte, Identity, error) {
	f, err := Open(path)
	if err != nil {
		return nil, Identity{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, Identity{}, err
	}
	var buf bytes.Buffer
	buf.Grow(int(fi.Size()) + 1)
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, Identity{}, err
	}
	return buf.Bytes(), Identity{Exists: true, Ino: Inode(fi), Sum: sha256.Sum256(buf.Bytes())}, nil
}

// Current reports whether path still is what id says was read.
func Current(path string, id Identity) (bool, error) {
	_, now, err := ReadDoc(path)
	if errors.Is(err, os.ErrNotExist) {
		return !id.Exists, nil
	}
	if err != nil {
		return false, err
	}
	return now == id, nil
}

// WriteAtomic replaces path with data: temp file beside it, fsync, rename,
// directory fsync (the syncs when durable). With expect, it first checks
// that path still is what was read (ErrChanged otherwise), as late as
// possible: just before the rename. POSIX has no rename-if-unchanged, so a
// writer that skips the lock can still slip in between; the window is one
// system call wide instead of a whole read-modify-write.
func WriteAtomic(path string, data []byte, perm os.FileMode, durable bool, expect *Identity) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*") // dot: watchers skip it
	if err != nil {
		return noRoom(err)
	}
	renamed := false
	defer func() {
		if !renamed { // never remove by name after the rename: the name is the document now
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	_, werr := tmp.Write(data)
	var serr error
	if durable {
		serr = tmp.Sync()
	}
	if err := errors.Join(werr, tmp.Chmod(perm), serr, tmp.Close()); err != nil {
		return noRoom(err)
	}
	if expect != nil {
		ok, err := Current(path, *expect)
		if err != nil {
			return err
		}
		if !ok {
			return ErrChanged
		}
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	renamed = true
	if durable {
		return SyncDir(dir)
	}
	return nil
}

// SyncDir fsyncs a directory, making the names in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// Inode is the inode number of fi, or 0 where the system has none.
func Inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
