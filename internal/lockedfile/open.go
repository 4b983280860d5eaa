package lockedfile

import (
	"errors"
	"os"
	"syscall"
)

// OpenFile is os.OpenFile for regular files, without the runtime's attempt
// to register the descriptor with its network poller: os.OpenFile spends
// four fcntl(2) calls and a failing epoll_ctl(2) on every regular file it
// opens, more than the read that follows on a tool call's hot path. The
// descriptor is close-on-exec; errors are *os.PathError, as os.OpenFile's.
// It is the one opener of files aipm reads, writes or locks: it opens
// only a regular file (anything else, a FIFO or a device, is
// ErrNotRegular, without blocking), never follows a symbolic link in the
// last component, nor one in a directory below a confined root (ErrLink).
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	return openRegular(path, flag, perm)
}

// Open opens path for reading, as OpenFile.
func Open(path string) (*os.File, error) { return OpenFile(path, os.O_RDONLY, 0) }

// ReadFile is os.ReadFile through Open.
func ReadFile(path string) ([]byte, error) {
	data, _, err := ReadDoc(path)
	return data, err
}

// createTemp is os.CreateTemp(dir, prefix+"*") for the temporary files
// this package writes and renames: created 0600, exclusive, close-on-exec,
// and, like OpenFile, without the runtime's attempt to register the
// descriptor with its network poller (os.CreateTemp spends four fcntl(2)
// calls and a failing epoll_ctl(2) on it).
func createTemp(dir, prefix string) (*os.File, error) {
	if pool := poolFor(dir); pool != nil {
		if f, ok := pool.take(tempName(dir, prefix)); ok {
			return f, nil
		}
	}
	for try := 0; ; try++ {
		name := tempName(dir, prefix)
		fd, err := syscall.Open(name, syscall.O_RDWR|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0o600)
		switch {
		case err == nil:
			return os.NewFile(uintptr(fd), name), nil
		case errors.Is(err, syscall.EINTR), errors.Is(err, syscall.EEXIST) && try < 100:
		default:
			return nil, &os.PathError{Op: "createtemp", Path: name, Err: err}
		}
	}
}
