package mcpserver

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A pipe comes back on the poller (non-blocking, so a Close ends a read
// waiting on it); once done, the descriptor it shares is blocking again.
// Anything else comes back as is.
func TestPollable(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := r.SyscallConn()
	sc.Control(func(fd uintptr) { syscall.SetNonblock(int(fd), false) }) // as a parent's pipe arrives
	defer r.Close()
	defer w.Close()
	pr, done := Pollable(r)
	if pr == r {
		t.Fatal("a pipe came back as is")
	}
	if !nonblocking(t, r) {
		t.Fatal("the pipe is not in non-blocking mode")
	}
	go w.Write([]byte("hello\n"))
	buf := make([]byte, 6)
	if _, err := io.ReadFull(pr, buf); err != nil || string(buf) != "hello\n" {
		t.Fatalf("read %q, %v", buf, err)
	}
	readErr := make(chan error, 1)
	go func() { _, err := pr.Read(buf); readErr <- err }()
	time.Sleep(10 * time.Millisecond)
	done()
	select {
	case err := <-readErr:
		if err == nil {
			t.Fatal("a read after done returned data")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("done did not end a waiting read")
	}
	if nonblocking(t, r) {
		t.Fatal("done left the shared descriptor non-blocking")
	}

	f, err := os.Create(filepath.Join(t.TempDir(), "plain"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if pf, done := Pollable(f); pf != f {
		t.Fatal("a regular file was replaced")
	} else {
		done()
	}
}

func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	sc, err := f.SyscallConn() // not f.Fd(), which makes the descriptor blocking
	if err != nil {
		t.Fatal(err)
	}
	var flags uintptr
	var errno syscall.Errno
	sc.Control(func(fd uintptr) { flags, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0) })
	if errno != 0 {
		t.Fatal(errno)
	}
	return flags&syscall.O_NONBLOCK != 0
}
