package mcpserver

import (
	"os"
	"syscall"
)

// Pollable returns a duplicate of f's descriptor on Go's network poller
// when f is a pipe or a socket (aipm serve's stdin, as an agent's CLI starts
// it): a read waiting for the client then parks a goroutine instead of
// holding a thread in read(2), which costs a thread handoff per request and
// keeps the runtime's monitor waking every 20 µs. Anything else (a
// terminal, a file) comes back as is. done closes the duplicate and puts
// the descriptor back in blocking mode for whoever shares it after us.
func Pollable(f *os.File) (r *os.File, done func()) {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return f, func() {}
	}
	sc, err := f.SyscallConn()
	if err != nil {
		return f, func() {}
	}
	dup := -1
	sc.Control(func(fd uintptr) {
		// Under ForkLock, as os/exec forks: no child inherits the duplicate.
		syscall.ForkLock.RLock()
		defer syscall.ForkLock.RUnlock()
		if dup, err = syscall.Dup(int(fd)); err == nil {
			syscall.CloseOnExec(dup)
		}
	})
	if err != nil || dup < 0 {
		return f, func() {}
	}
	// O_NONBLOCK belongs to the open file description, which the duplicate
	// shares: set, it makes os.NewFile register the descriptor with the poller.
	if err := syscall.SetNonblock(dup, true); err != nil {
		syscall.Close(dup)
		return f, func() {}
	}
	r = os.NewFile(uintptr(dup), f.Name())
	return r, func() {
		r.Close()
		sc.Control(func(fd uintptr) { syscall.SetNonblock(int(fd), false) })
	}
}
