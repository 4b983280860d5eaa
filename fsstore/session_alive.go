package fsstore

import (
	"errors"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// processAlive says whether the process pid (an aipm serve holding a
// session) still runs on this machine. Unknown pids count as alive. A
// process found running is watched through a pidfd (pidfd_open(2)), which
// stays bound to that process whatever becomes of its pid: while the pidfd
// says it has not exited, one poll(2) answers, where kill(2) and
// /proc/<pid>/stat take four calls; once it has, the answer is asked the
// long way again (the pid may name a new process now).
func processAlive(pid int) bool {
	if pid <= 0 {
		return true
	}
	if watched.running(pid) {
		return true
	}
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if zombie(pid) {
		return false
	}
	watched.watch(pid)
	return true
}

// watched are the processes processAlive found running.
var watched pidfds

// pidfds holds a pidfd per watched process, at most pidfdsMax of them
// (past it, it starts over).
type pidfds struct {
	mu sync.Mutex // held around every use of a descriptor: none is closed under a poll
	m  map[int]int
}

const pidfdsMax = 64

// running says whether pid is watched and has not exited since; false
// also when it is not watched (ask the long way).
func (p *pidfds) running(pid int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	fd, ok := p.m[pid]
	if !ok {
		return false
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	if err == nil && n == 0 {
		return true // not readable: it has not exited
	}
	unix.Close(fd)
	delete(p.m, pid)
	return false
}

// watch opens a pidfd for pid, just found running (a kernel without
// pidfds leaves it unwatched).
func (p *pidfds) watch(pid int) {
	fd, err := unix.PidfdOpen(pid, 0) // close-on-exec, as pidfd_open(2) makes them
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.m[pid]; ok {
		unix.Close(fd)
		return
	}
	if p.m == nil || len(p.m) >= pidfdsMax {
		for _, old := range p.m {
			unix.Close(old)
		}
		p.m = map[int]int{}
	}
	p.m[pid] = fd
}
