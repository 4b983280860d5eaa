package fsstore

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"aipm/internal/testenv"
)

func TestZombie(t *testing.T) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		testenv.SkipMissing(t, "the program true")
	}
	cmd := exec.Command(truePath)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := cmd.Process.Pid
	// Not reaped until Wait: once it has exited, it is a zombie.
	deadline := time.Now().Add(10 * time.Second)
	for !zombie(exited) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	for _, tc := range []struct {
		name string
		pid  int
		want bool
	}{
		{"this process", os.Getpid(), false},
		{"an exited child not reaped", exited, true},
		{"no such process", 1 << 30, false},
	} {
		if got := zombie(tc.pid); got != tc.want {
			t.Errorf("%s: zombie(%d) = %v, want %v", tc.name, tc.pid, got, tc.want)
		}
	}
	cmd.Wait()
	if zombie(exited) {
		t.Errorf("reaped: zombie(%d) = true", exited)
	}
}

// processAlive follows a process it found running to its end, exited
// and not reaped (a zombie) or reaped; and says this process runs, however
// often it is asked. A start that is not the process's (its pid given to
// another since) is a process gone, watched or not; an unknown start ("")
// is any process at the pid.
func TestProcessAlive(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		testenv.SkipMissing(t, "the program sleep")
	}
	checkSelfAlive(t)
	cmd := exec.Command(sleep, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	start := processStart(pid)
	if start == "" || start == ownStart() {
		t.Fatalf("the child's start %q (this process's %q)", start, ownStart())
	}
	// Another process that held pid before (or will): this one's start
	// with a tick of its own.
	boot, ticks, _ := strings.Cut(start, "/")
	n, _ := strconv.ParseUint(ticks, 10, 64)
	other := boot + "/" + strconv.FormatUint(n+1, 10)
	for range 2 { // not watched, then watched
		if !processAlive(pid, start) || !processAlive(pid, "") {
			t.Fatalf("a running child (%d) is not alive", pid)
		}
		if processAlive(pid, other) {
			t.Fatalf("the process started at %s is alive at pid %d, which the one started at %s holds", other, pid, start)
		}
	}
	cmd.Process.Kill()
	deadline := time.Now().Add(10 * time.Second)
	for !zombie(pid) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if processAlive(pid, start) {
		t.Errorf("a killed child, not reaped (%d), is alive", pid)
	}
	cmd.Wait()
	if processAlive(pid, start) || processAlive(pid, "") {
		t.Errorf("a reaped child (%d) is alive", pid)
	}
	if processAlive(1<<30, "") || !processAlive(0, "") {
		t.Error("no such process is alive, or an unknown pid (0) is not")
	}
}

// checkSelfAlive: this process has a start, the same each time it is
// asked, and is alive by it or by its pid alone, however often asked.
func checkSelfAlive(t *testing.T) {
	self := os.Getpid()
	if ownStart() == "" || ownStart() != processStart(self) {
		t.Fatalf("this process's start: %q, then %q", ownStart(), processStart(self))
	}
	for range 3 {
		if !processAlive(self, ownStart()) || !processAlive(self, "") {
			t.Fatal("this process is not alive")
		}
	}
}
