package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// percentile returns the p-th percentile of sorted durations.
func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, len(d)*p/100)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func signedMs(d time.Duration) string { return fmt.Sprintf("%+.2f ms", float64(d.Microseconds())/1000) }

// lineCounter is a writer (a server's stderr) that counts lines containing
// want and lets a waiter block until the count passes a value.
type lineCounter struct {
	want string
	mu   sync.Mutex
	cond *sync.Cond
	n    int
	part []byte
}

func newLineCounter(want string) *lineCounter {
	c := &lineCounter{want: want}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.part = append(c.part, p...)
	for {
		i := slices.Index(c.part, '\n')
		if i < 0 {
			break
		}
		if strings.Contains(string(c.part[:i]), c.want) {
			c.n++
			c.cond.Broadcast()
		}
		c.part = c.part[i+1:]
	}
	return len(p), nil
}

// waitPast waits until more than n lines were counted, or ctx ends: its
// error then names the line waited for and why the wait ended (the
// context's cause: a deadline, a server that exited).
func (c *lineCounter) waitPast(ctx context.Context, n int) error {
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.n <= n {
		if ctx.Err() != nil {
			return fmt.Errorf("waiting for the server to log %q: %w", c.want, context.Cause(ctx))
		}
		c.cond.Wait()
	}
	return nil
}

func (c *lineCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// cpuUsage sums this process's CPU time (the bench client's) and the wall
// time over the phases it is started and stopped around.
type cpuUsage struct {
	cpu, wall time.Duration
	cpu0      time.Duration
	wall0     time.Time
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (u *cpuUsage) start() { u.cpu0, u.wall0 = processCPU(), time.Now() }

func (u *cpuUsage) stop() {
	u.cpu += processCPU() - u.cpu0
	u.wall += time.Since(u.wall0)
}

// String is the client's CPU as a share of one core over its phases.
func (u *cpuUsage) String() string {
	if u.wall <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%% of a core", 100*float64(u.cpu)/float64(u.wall))
}

// peakRSS reads a process's peak resident set size (VmHWM) in MB.
func peakRSS(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return -1
}
