package lockedfile

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Identity is what a reader read of a document: its inode and a hash of its
// bytes. The zero Identity is "there was no file".
type Identity struct {
	Exists bool
	Ino    uint64
	Sum    [sha256.Size]byte

	stamp Stamp     // the file's stamp when it was opened: a cheap first check
	floor time.Time // Update's: a version withdrawn since had this time
}

// same says a and b name one version: what Current and the exchange
// compare (the stamp only rules out quickly).
func (a Identity) same(b Identity) bool {
	return a.Exists == b.Exists && a.Ino == b.Ino && a.Sum == b.Sum
}

// ReadDoc reads the whole file at path on one descriptor and returns its
// bytes and identity. A missing file is an error wrapping os.ErrNotExist;
// one larger than MaxDocument, ErrTooLarge.
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
	return readDocFrom(f, fi, path)
}

// readDocFrom is ReadDoc of the document open at its start as f, whose
// fstat said fi.
func readDocFrom(f *os.File, fi os.FileInfo, path string) ([]byte, Identity, error) {
	var buf bytes.Buffer
	buf.Grow(int(min(fi.Size(), MaxDocument)) + 1)
	if err := readBounded(f, path, &buf); err != nil {
		return nil, Identity{}, err
	}
	return buf.Bytes(), Identity{Exists: true, Ino: Inode(fi), Sum: sha256.Sum256(buf.Bytes()), stamp: StampOf(fi)}, nil
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
	return now.same(id), nil
}

// WriteAtomic replaces path with data: temp file beside it, fsync, rename,
// directory fsync (the syncs when durable). With expect, the new version
// goes in only if path still is what was read (ErrChanged otherwise): a
// stat first (a save since changed the stamp), then an atomic exchange
// that looks at what it took out and puts a save made meanwhile back
// (swapIfUnchanged). Where the exchange is not available, what is there is
// read again just before a plain rename: a writer that skips the lock can
// then still slip in between, in a window one system call wide.
func WriteAtomic(path string, data []byte, perm os.FileMode, durable bool, expect *Identity) error {
	if err := CheckDirs(path); err != nil {
		return err
	}
	var floor time.Time
	if expect != nil {
		floor = expect.floor
	}
	tmp, err := writeTemp(path, data, perm, durable, floor)
	if err != nil {
		return err
	}
	inPlace, err := putInPlace(tmp, path, expect)
	if !inPlace { // never remove by name once placed: the name is the document now
		removeTemp(tmp)
		return err
	}
	placed(tmp)
	if err == nil && durable {
		return SyncDir(filepath.Dir(path))
	}
	return err
}

// writeTemp writes data to a new temp file beside path (its name begins
// with a dot: watchers skip it) with mode perm, stamped later than path
// and than floor (laterThan), synced when durable, and returns its name.
// A temp file that could not be written whole is removed.
func writeTemp(path string, data []byte, perm os.FileMode, durable bool, floor time.Time) (string, error) {
	tmp, err := createTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return "", noRoom(err)
	}
	_, werr := tmp.Write(data)
	if werr == nil {
		werr = laterThan(tmp, path, floor)
	}
	var serr error
	if durable {
		serr = tmp.Sync()
	}
	if err := errors.Join(werr, tmp.Chmod(perm), serr, tmp.Close()); err != nil {
		removeTemp(tmp.Name())
		return "", noRoom(err)
	}
	return tmp.Name(), nil
}

// putInPlace puts the temp file tmp in place of path, by WriteAtomic's
// rules for expect, and says whether it did: once placed (or exchanged,
// even when what the exchange took out was then put back), the name tmp
// is no longer the caller's to remove.
func putInPlace(tmp, path string, expect *Identity) (placed bool, err error) {
	if expect != nil && expect.Exists {
		if now, err := StampPath(path); err != nil || expect.stamp != (Stamp{}) && now != expect.stamp {
			return false, cmp.Or(err, ErrChanged) // saved (or removed) since it was read
		}
		if testHookBeforeExchange != nil {
			testHookBeforeExchange(path)
		}
		// The exchange checks what it took out: no read before it.
		swapped, err := swapIfUnchanged(tmp, path, expect)
		if swapped || err != errExchange {
			return swapped, err
		}
	}
	if expect != nil {
		ok, err := Current(path, *expect)
		if err != nil {
			return false, err
		}
		if !ok {
			return false, ErrChanged
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return false, err
	}
	return true, nil
}

// laterThan is later for the file at path as it is now, and for floor (a
// version Update put in place and withdrew): nothing asked when there is
// neither.
func laterThan(f *os.File, path string, floor time.Time) error {
	fi, err := os.Stat(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err == nil && fi.ModTime().After(floor) {
		floor = fi.ModTime()
	}
	return later(f, floor)
}

// testHookBeforeExchange, when a test sets it, runs between WriteAtomic's
// stamp check and its exchange: a save there is one only the exchange
// sees.
var testHookBeforeExchange func(path string)

// errExchange says the atomic exchange of two names is not available.
var errExchange = errors.New("exchange not supported")

// swapIfUnchanged puts the new document tmp in place of path by an atomic
// exchange, then looks at what it took out: if that is not what was read
// (expect), someone saved path between the check and the exchange (an
// editor's rename, or a write in place), and their file is put back:
// ErrChanged. A plain rename would have lost their save without a trace.
// swapped says the exchange happened (tmp's name then no longer holds the
// new document; it is removed here).
func swapIfUnchanged(tmp, path string, expect *Identity) (swapped bool, err error) {
	ours, err := os.Stat(tmp)
	if err != nil {
		return false, err
	}
	if err := exchange(tmp, path); err != nil {
		if _, serr := os.Lstat(path); errors.Is(err, syscall.ENOENT) && errors.Is(serr, os.ErrNotExist) {
			return false, ErrChanged // removed since it was read
		}
		return false, err
	}
	defer os.Remove(tmp) // what path held, or ours again after a put-back
	_, old, err := ReadDoc(tmp)
	if err == nil && old.same(*expect) {
		return true, nil
	}
	// Put theirs back, unless yet another save replaced ours meanwhile
	// (then the newest save stands, as it would have without aipm). Ours
	// was in place for a moment, and its inode is about to be freed: the
	// next version Update writes is made later than it too.
	expect.floor = ours.ModTime()
	if now, serr := os.Stat(path); serr == nil && os.SameFile(now, ours) {
		if err := exchange(tmp, path); err != nil {
			return true, fmt.Errorf("put back %s after a concurrent save: %w", path, err)
		}
	}
	return true, ErrChanged
}

// SyncDir fsyncs a directory, making the names in it durable. It opens
// the directory as OpenFile opens files: without os.Open's attempt to
// register the descriptor with the runtime's poller.
func SyncDir(dir string) error {
	var fd int
	var err error = syscall.EINTR
	for err == syscall.EINTR {
		fd, err = syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	}
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer syscall.Close(fd)
	for err = syscall.EINTR; err == syscall.EINTR; {
		err = syscall.Fsync(fd)
	}
	if err != nil {
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

// Update is the compare-and-swap read-modify-write of a document (DESIGN
// section 4, rule 8), the one loop behind every document aipm changes. The
// caller holds the document's lock against aipm's other writers; Update
// guards against the others (a human's editor). It takes the flock of the
// file itself for the whole read-modify-write (lockDoc: an editor that
// takes it too is never overwritten), reads path (nil and exists false
// when there is none), calls edit, and writes what edit returns (nil:
// nothing to write) with WriteAtomic's check of what was read (for an
// editor that takes no lock). When someone saved path in between, it reads
// again and re-applies edit; after attempts such races it returns
// ErrChanged, having written nothing, so that neither change is lost
// silently. It returns how many races it saw. It waits for an editor's
// lock no longer than ctx allows.
func Update(ctx context.Context, path string, perm os.FileMode, durable bool, attempts int, edit func(data []byte, exists bool) ([]byte, error)) (races int, err error) {
	var floor time.Time // of a version put in place and withdrawn
	for {
		err := updateOnce(ctx, path, perm, durable, &floor, edit)
		if !errors.Is(err, ErrChanged) {
			return races, err
		}
		if races++; races >= attempts {
			return races, ErrChanged
		}
	}
}

// updateOnce is one pass of Update, under the file's flock.
func updateOnce(ctx context.Context, path string, perm os.FileMode, durable bool, floor *time.Time, edit func(data []byte, exists bool) ([]byte, error)) error {
	f, held, unlock, err := lockDoc(ctx, path)
	if err != nil {
		return err
	}
	defer unlock()
	var data []byte
	var id Identity
	if f != nil {
		// Read through the descriptor locked: the path named it just now.
		data, id, err = readDocFrom(f, held, path)
	} else if data, id, err = ReadDoc(path); err == nil {
		return ErrChanged // created since the lock found none: lock it
	}
	exists := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	out, err := edit(data, exists)
	if err != nil || out == nil {
		return err
	}
	id.floor = *floor
	err = WriteAtomic(path, out, perm, durable, &id)
	*floor = id.floor
	return err
}
