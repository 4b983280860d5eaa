// Package helperproc lets a package's test binary play the other
// processes of its multi-process tests: Command starts the binary again
// in a role, and the binary's TestMain, through Main, plays that role
// instead of running the tests. For tests only; the roles are the
// package's own.
package helperproc

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// env names the role a re-executed test binary plays.
const env = "AIPM_HELPER"

// Main is a test binary's TestMain: started by Command, it plays the role
// named (play gets the role and the arguments Command was given) and
// exits 0, or 1 with the error on stderr; otherwise it runs the tests.
func Main(m *testing.M, play func(role string, args []string) error) {
	if role := os.Getenv(env); role != "" {
		if err := play(role, os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Command is the test binary started again to play role with args (not
// started yet); its stderr is the test's.
func Command(t testing.TB, role string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$"}, args...)...)
	cmd.Env = append(os.Environ(), env+"="+role)
	cmd.Stderr = os.Stderr
	return cmd
}

// Role is the role this binary was started to play by Command ("": none,
// it runs the tests): a TestMain that prepares the tests first asks it.
func Role() string { return os.Getenv(env) }
