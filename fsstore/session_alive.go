package fsstore

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// processAlive says whether the process pid (an aipm serve holding a
// session) still runs on this machine and is the one that started at
// start (processStart; "" when unknown, a session of an older aipm: any
// process at pid is taken for it). A pid now held by another process is a
// process gone: pids are reused. Unknown pids count as alive. A process
// found running is watched through a pidfd (pidfd_open(2)), which stays
// bound to that process whatever becomes of its pid: while the pidfd says
// it has not exited, one poll(2) answers, where kill(2) and
// /proc/<pid>/stat take four calls; once it has, the answer is asked the
// long way again (the pid may name a new process now).
func processAlive(pid int, start string) bool {
	if pid <= 0 {
		return true
	}
	if at, ok := watched.running(pid); ok {
		return sameProcess(at, start)
	}
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	zombie, at := procStat(pid)
	if zombie || !sameProcess(at, start) {
		return false
	}
	watched.watch(pid, at)
	return true
}

// sameProcess says whether two starts of a pid (processStart) can be the
// same process: equal, or one unknown.
func sameProcess(a, b string) bool { return a == "" || b == "" || a == b }

// processStart is what tells the process pid from another that holds its
// pid later: this boot's id and the process's start in clock ticks since
// boot, as /proc says them ("" when it cannot tell).
func processStart(pid int) string {
	_, start := procStat(pid)
	return start
}

// ownStart is processStart of this process, asked once.
var ownStart = sync.OnceValue(func() string { return processStart(os.Getpid()) })

// bootID is this boot's id (/proc/sys/kernel/random/boot_id; "" unread),
// read once: a process's start in ticks counts from the boot.
var bootID = sync.OnceValue(func() string {
	var buf [64]byte // a UUID and its newline
	return strings.TrimSpace(string(readProc("/proc/sys/kernel/random/boot_id", buf[:])))
})

// readProc reads the short file path of /proc into buf with three system
// calls, one read (os.ReadFile takes ten, registering the file with the
// runtime's poller): a short-lived process such as a hook asks twice.
// nil when it cannot be read.
func readProc(path string, buf []byte) []byte {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	n, err := syscall.Read(fd, buf)
	for errors.Is(err, syscall.EINTR) {
		n, err = syscall.Read(fd, buf)
	}
	if err != nil || n <= 0 {
		return nil
	}
	return buf[:n]
}

// zombie says whether pid has exited and waits to be reaped (a process
// whose parent died under a pid 1 that does not reap): it is gone.
func zombie(pid int) bool {
	z, _ := procStat(pid)
	return z
}

// procStat reads /proc/<pid>/stat with three system calls (os.ReadFile
// takes ten): whether pid is a zombie, and its start (processStart; ""
// when unread). The fields follow the command name, at most 16 bytes, in
// parentheses: the state first, the start time (field 22) nineteen
// fields later.
func procStat(pid int) (zombie bool, start string) {
	var buf [512]byte
	data := readProc("/proc/"+strconv.Itoa(pid)+"/stat", buf[:])
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return false, ""
	}
	zombie = data[i+2] == 'Z'
	fields := bytes.Fields(data[i+1:])
	const startField = 22 - 3 // fields[0] is field 3, the state
	if boot := bootID(); boot != "" && len(fields) > startField {
		if _, err := strconv.ParseUint(string(fields[startField]), 10, 64); err == nil {
			start = boot + "/" + string(fields[startField])
		}
	}
	return zombie, start
}

// watched are the processes processAlive found running.
var watched pidfds

// pidfds holds a pidfd per watched process, with its start, at most
// pidfdsMax of them (past it, it starts over).
type pidfds struct {
	mu sync.Mutex // held around every use of a descriptor: none is closed under a poll
	m  map[int]pidfd
}

// A pidfd is a watched process: its descriptor, and its start.
type pidfd struct {
	fd    int
	start string
}

const pidfdsMax = 64

// running says whether pid is watched and has not exited since, and the
// start of the process watched; false also when it is not watched (ask
// the long way).
func (p *pidfds) running(pid int) (start string, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w, ok := p.m[pid]
	if !ok {
		return "", false
	}
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	if err == nil && n == 0 {
		return w.start, true // not readable: it has not exited
	}
	unix.Close(w.fd)
	delete(p.m, pid)
	return "", false
}

// watch opens a pidfd for pid, just found running with start (a kernel
// without pidfds leaves it unwatched). The pid is not checked again: in
// the moment between, it would have to exit and its pid be given to
// another process.
func (p *pidfds) watch(pid int, start string) {
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
			unix.Close(old.fd)
		}
		p.m = map[int]pidfd{}
	}
	p.m[pid] = pidfd{fd, start}
}
