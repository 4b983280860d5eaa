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
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	for {
		fd, err := syscall.Open(path, flag|syscall.O_CLOEXEC, uint32(perm.Perm()))
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}

// Open opens path for reading, as OpenFile.
func Open(path string) (*os.File, error) { return OpenFile(path, os.O_RDONLY, 0) }

// ReadFile is os.ReadFile through Open.
func ReadFile(path string) ([]byte, error) {
	data, _, err := ReadDoc(path)
	return data, err
}
