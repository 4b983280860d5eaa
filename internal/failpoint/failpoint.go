// Package failpoint stops or slows a process at a named point when a test
// asks: the environment variable AIPM_TEST_FAILPOINT, which only tests set,
// names the point. A crash, a stall or a delay at the worst moment, on
// demand.
package failpoint

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// Env names the point a process stops at.
const Env = "AIPM_TEST_FAILPOINT"

// named is read once: tests set it in the environment a process starts in.
var named = os.Getenv(Env)

// Kill SIGKILLs this process at the point name, when Env names it.
func Kill(name string) {
	if named == name {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
}

// Hold stops the calling goroutine for ever at the point name, when Env
// names it, once it has said so on stderr ("failpoint NAME: holding"): the
// rest of the process goes on, and the test decides what happens next
// (typically a SIGKILL).
func Hold(name string) {
	if named == name {
		fmt.Fprintf(os.Stderr, "failpoint %s: holding\n", name)
		select {}
	}
}

// Delay makes the calling goroutine wait d at the point name, when Env
// names it: a slow machine, on demand.
func Delay(name string, d time.Duration) {
	if named == name {
		time.Sleep(d)
	}
}
