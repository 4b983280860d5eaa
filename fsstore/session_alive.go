package fsstore

import (
	"errors"
	"syscall"
)

// processAlive says whether the process pid (an aipm serve holding a
// session) still runs on this machine. Unknown pids count as alive.
func processAlive(pid int) bool {
	if pid <= 0 {
		return true
	}
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return !zombie(pid)
}
