package lockedfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Dropped is what DropPrefix did, or on a dry run would do.
type Dropped struct {
	// Old is the inode compacted; New, the one that replaced it (0 on a
	// dry run or when nothing was dropped).
	Old, New uint64
	// Cut is how many bytes were dropped from the head; Size, the file's
	// size when it was locked.
	Cut, Size int64
}

// DropOptions shape one DropPrefix.
type DropOptions struct {
	Durable bool // fsync the new file and the directory
	DryRun  bool // plan only: nothing is written
}

// TempCompact is the infix of DropPrefix's temporary files
// (.NAME.tmp-compact-RANDOM: a dot, so watchers skip them, and .tmp-, so
// doctor knows them).
const TempCompact = ".tmp-compact-"

// DropPrefix replaces the JSONL file at path, under its flock, by its
// bytes from plan's cut (a line boundary) to the end: the head is
// dropped, the tail kept byte for byte. plan sees the locked file, its
// size and inode; nothing can be appended while it runs. The kept tail is
// copied to a temporary file beside path and synced; commit (if not nil)
// runs before the rename (a record of what is dropped, written while the
// lines still exist), then the temporary file is renamed over path.
// Appenders waiting on the lock find the new inode and retry (DESIGN
// section 4, rule 2); a reader holding the old file reads it to its end.
// A process killed at any point leaves path whole, old or new, and at
// most a temporary file that RemoveStaleCompactions removes. A missing
// file is nothing to do.
func DropPrefix(ctx context.Context, path string, opt DropOptions, plan func(f *os.File, size int64, inode uint64) (int64, error), commit func(Dropped) error) (Dropped, error) {
	rank := rankAcquire(path, true)
	d, err := dropPrefix(ctx, path, opt, plan, commit)
	rank.release()
	return d, err
}

// dropPrefix is DropPrefix, while the lock-order checker counts the
// file's lock held.
func dropPrefix(ctx context.Context, path string, opt DropOptions, plan func(f *os.File, size int64, inode uint64) (int64, error), commit func(Dropped) error) (Dropped, error) {
	f, fi, err := lockExisting(ctx, path)
	if f == nil || err != nil {
		return Dropped{}, err
	}
	defer f.Close()
	d := Dropped{Old: Inode(fi), Size: fi.Size()}
	if d.Cut, err = plan(f, d.Size, d.Old); err != nil || d.Cut <= 0 || opt.DryRun {
		return d, err
	}
	if d.Cut > d.Size {
		return Dropped{}, fmt.Errorf("compact %s: cut %d is past the end (%d)", path, d.Cut, d.Size)
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, d.Cut-1); err != nil || last[0] != '\n' {
		return Dropped{}, fmt.Errorf("compact %s: cut %d is not at a line's start", path, d.Cut)
	}
	tmp, err := copyTail(path, f, fi, d.Cut, d.Size, opt.Durable)
	if err != nil {
		return Dropped{}, err
	}
	renamed := false
	defer func() {
		if !renamed {
			removeTemp(tmp)
		} else {
			placed(tmp)
		}
	}()
	tfi, err := os.Stat(tmp)
	if err != nil {
		return Dropped{}, err
	}
	d.New = Inode(tfi)
	if commit != nil {
		if err := commit(d); err != nil {
			return Dropped{}, err
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return Dropped{}, fmt.Errorf("compact %s: %w", path, err)
	}
	renamed = true
	if opt.Durable {
		return d, SyncDir(filepath.Dir(path))
	}
	return d, nil
}

// lockExisting opens the JSONL file at path and takes its flock, making
// sure the lock is on the inode path names (an editor's save by rename
// while it waited: it locks the new one). A missing file is (nil, nil, nil).
func lockExisting(ctx context.Context, path string) (*os.File, os.FileInfo, error) {
	for {
		f, err := Open(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if err := flockCtx(ctx, f, syscall.LOCK_EX); err != nil {
			return nil, nil, fmt.Errorf("lock %s: %w", path, err)
		}
		held, herr := f.Stat()
		now, nerr := os.Stat(path)
		if herr == nil && nerr == nil && os.SameFile(held, now) {
			return f, held, nil
		}
		f.Close()
		if herr != nil {
			return nil, nil, herr
		}
		if nerr != nil && !errors.Is(nerr, os.ErrNotExist) {
			return nil, nil, nerr
		}
	}
}

// copyTail writes f's bytes [from, to) to a new temporary file beside
// path, with f's mode (fi) and a modification time later than f's, and
// returns its name.
func copyTail(path string, f *os.File, fi os.FileInfo, from, to int64, durable bool) (string, error) {
	tmp, err := createTemp(filepath.Dir(path), "."+filepath.Base(path)+TempCompact)
	if err != nil {
		return "", noRoom(fmt.Errorf("compact %s: %w", path, err))
	}
	_, werr := io.Copy(tmp, io.NewSectionReader(f, from, to-from))
	if werr == nil {
		werr = later(tmp, fi.ModTime())
	}
	var serr error
	if durable {
		serr = tmp.Sync()
	}
	if err := errors.Join(werr, tmp.Chmod(fi.Mode().Perm()), serr, tmp.Close()); err != nil {
		removeTemp(tmp.Name())
		return "", noRoom(fmt.Errorf("compact %s: %w", path, err))
	}
	return tmp.Name(), nil
}

// RemoveStaleCompactions removes the temporary files DropPrefix left in
// dir when its process was killed. The caller makes sure no compaction
// runs (its lock).
func RemoveStaleCompactions(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") && strings.Contains(e.Name(), TempCompact) && e.Type().IsRegular() {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// LineStart is the start of the line whose last byte (its newline, when
// off is a line boundary) is at off-1: the offset just after the newline
// before it, or 0.
func LineStart(f *os.File, off int64) (int64, error) {
	if off == 0 {
		return 0, nil
	}
	end := off - 1 // the newline that ends the line, when off is a line boundary
	buf := make([]byte, 64<<10)
	for pos := end; pos > 0; {
		n := min(int64(len(buf)), pos)
		chunk := buf[:n]
		if _, err := f.ReadAt(chunk, pos-n); err != nil {
			return 0, err
		}
		if i := lastNewline(chunk); i >= 0 {
			return pos - n + int64(i) + 1, nil
		}
		pos -= n
	}
	return 0, nil
}

// NewestLinesStart is the offset where the newest n complete lines of f
// (of size bytes) begin; 0 when it has no more than n. An unterminated
// last line is not counted (and is kept: it is after the offset).
func NewestLinesStart(f *os.File, size int64, n int) (int64, error) {
	if n < 0 {
		n = 0
	}
	buf := make([]byte, 64<<10)
	seen := 0 // newlines met, walking back from the end
	for pos := size; pos > 0; {
		k := min(int64(len(buf)), pos)
		chunk := buf[:k]
		if _, err := f.ReadAt(chunk, pos-k); err != nil {
			return 0, err
		}
		for i := len(chunk) - 1; i >= 0; i-- {
			if chunk[i] != '\n' {
				continue
			}
			// the newline ending the newest complete line is the first met
			if seen++; seen == n+1 {
				return pos - k + int64(i) + 1, nil
			}
		}
		pos -= k
	}
	return 0, nil
}

// Resolve finds where cur stands in the open file f (its inode and size),
// as ReadPast would: the offset just past the last record it consumed.
// lost says it has no place (every id it remembers is gone: ReadPast would
// deliver the whole file again); trusted says its offset was taken as it
// is (same inode, its last id ending there).
func Resolve(f *os.File, path string, inode uint64, size int64, cur Cursor) (pos int64, trusted, lost bool, err error) {
	next := cur
	next.Inode = inode
	start, _, err := locate(f, path, &next, cur, size)
	if err != nil {
		return 0, false, false, err
	}
	fresh := cur.Offset == 0 && cur.LastID == "" && len(cur.Earlier) == 0
	if !fresh && start.Offset == 0 && next.LastID == "" {
		return 0, false, true, nil
	}
	return start.Offset, cur.Inode == inode && start.Offset == cur.Offset, false, nil
}
