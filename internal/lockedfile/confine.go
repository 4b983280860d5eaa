package lockedfile

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// MaxDocument is the most aipm reads of one JSON document (a task, a
// session, config.toml...): ten times more than any it writes. A larger
// file is refused with ErrTooLarge instead of being read into memory.
const MaxDocument = 4 << 20

// RefusedError is the refusal of an entry the opener never opens: Path
// and why (ErrLink or ErrNotRegular), with what to do about it.
type RefusedError struct {
	Path string
	Err  error
}

func (e *RefusedError) Error() string {
	return e.Path + ": " + e.Err.Error() + "; remove it or put a real file or directory in its place (aipm doctor lists every such entry)"
}
func (e *RefusedError) Unwrap() error { return e.Err }

// roots are the confined directories (Confine): below one, every
// directory between it and a file aipm opens must be a real directory.
var roots sync.Map // string -> struct{}

// Confine makes root a confined directory: from now on this process opens,
// locks and replaces files below root only through real directories, never
// through a symbolic link (ErrLink). root itself may be a link.
func Confine(root string) { roots.Store(filepath.Clean(root), struct{}{}) }

// rootOf is the confined root path lies below, or "".
func rootOf(path string) string {
	for dir := filepath.Dir(path); ; {
		if _, ok := roots.Load(dir); ok {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// CheckDirs checks that every directory between path's confined root (if
// any) and path is a real directory: not a symbolic link, not missing its
// way through something else. A missing one is not an error here (the open
// or create that follows reports it).
func CheckDirs(path string) error {
	path = filepath.Clean(path)
	root := rootOf(path)
	if root == "" {
		return nil
	}
	rel := strings.TrimPrefix(filepath.Dir(path), root)
	dir := root
	for _, name := range strings.Split(rel, string(filepath.Separator)) {
		if name == "" {
			continue
		}
		dir = filepath.Join(dir, name)
		fi, err := os.Lstat(dir)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return nil
		case err != nil:
			return err
		case fi.Mode()&os.ModeSymlink != 0:
			return &RefusedError{Path: dir, Err: ErrLink}
		case !fi.IsDir():
			return &os.PathError{Op: "open", Path: dir, Err: syscall.ENOTDIR}
		}
	}
	return nil
}

// openRegular opens path as OpenFile does, refusing anything but a regular
// file reached through real directories: O_NOFOLLOW (a link is ErrLink),
// O_NONBLOCK (a FIFO never blocks the open), then fstat.
func openRegular(path string, flag int, perm os.FileMode) (*os.File, error) {
	if err := CheckDirs(path); err != nil {
		return nil, err
	}
	for {
		fd, err := syscall.Open(path, flag|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, uint32(perm.Perm()))
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK) {
			return nil, &RefusedError{Path: path, Err: ErrLink}
		}
		if errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.ENXIO) {
			// a directory opened for writing; a FIFO with no reader
			return nil, &RefusedError{Path: path, Err: ErrNotRegular}
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		var st syscall.Stat_t
		if err := fstat(fd, &st); err != nil {
			syscall.Close(fd)
			return nil, &os.PathError{Op: "stat", Path: path, Err: err}
		}
		if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
			syscall.Close(fd)
			return nil, &RefusedError{Path: path, Err: ErrNotRegular}
		}
		// Back to blocking (a regular file never blocks anyway), or
		// os.NewFile would try to register it with the network poller.
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, flag&unix.O_APPEND); err != nil {
			syscall.Close(fd)
			return nil, &os.PathError{Op: "fcntl", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}

func fstat(fd int, st *syscall.Stat_t) error {
	for {
		if err := syscall.Fstat(fd, st); !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// readBounded reads all of r into buf, up to MaxDocument bytes: more is
// ErrTooLarge (named path).
func readBounded(r io.Reader, path string, buf *bytes.Buffer) error {
	n, err := buf.ReadFrom(io.LimitReader(r, MaxDocument+1))
	if err != nil {
		return err
	}
	if n > MaxDocument {
		return &os.PathError{Op: "read", Path: path, Err: ErrTooLarge}
	}
	return nil
}

// ReadBounded reads the rest of the open document f (as Open opened it)
// into buf, at most MaxDocument bytes (ErrTooLarge).
func ReadBounded(f *os.File, buf *bytes.Buffer) error { return readBounded(f, f.Name(), buf) }

// CheckDir is CheckDirs for a directory: dir itself and every directory
// between its confined root and it must be real directories.
func CheckDir(dir string) error { return CheckDirs(filepath.Join(dir, "-")) }
