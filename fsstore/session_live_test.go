package fsstore

import (
	"os"
	"os/exec"
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
