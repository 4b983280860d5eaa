package sshtest

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"aipm/internal/testenv"
)

// TestServer: both hosts run a command with the session environment the
// server was given, and Close ends sshd and a session still running.
func TestServer(t *testing.T) {
	if why := Missing(); why != "" {
		testenv.SkipMissing(t, why)
	}
	s, err := Start(context.Background(), t.TempDir(), "SSHTEST_MARK=here")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, host := range Hosts {
		out, err := exec.Command(s.Command(host, "echo", "$SSHTEST_MARK", "$SSH_CONNECTION")[0], s.Command(host, "echo", "$SSHTEST_MARK", "$SSH_CONNECTION")[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v: %s\nsshd: %s", host, err, out, s.Log())
		}
		if f := strings.Fields(string(out)); len(f) != 5 || f[0] != "here" || f[1] != "127.0.0.1" {
			t.Errorf("%s: got %q, want the mark and SSH_CONNECTION from 127.0.0.1", host, out)
		}
	}
	argv := s.Command("home", "sleep", "600")
	sleeper := exec.Command(argv[0], argv[1:]...)
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleeper.Process.Kill()
	if kids := waitUnder(s.cmd.Process.Pid, "sleep", 10*time.Second); !slices.ContainsFunc(kids, named("sleep")) {
		t.Fatalf("sshd has %v under it, want its session and sleep", kids)
	}
	start := time.Now()
	s.Close()
	if err := sleeper.Wait(); err == nil {
		t.Error("the session's ssh ended well after Close")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %v", d)
	}
	if kids := descendants(s.cmd.Process.Pid); len(kids) != 0 {
		t.Errorf("processes left under sshd: %v", kids)
	}
}

// waitUnder reads the processes under pid until a reading holds one
// named comm, for patience at most, and returns the last reading: the one
// a test checks (a second reading races with the processes it looks at:
// sshd's pre-authentication child ends on its own).
func waitUnder(pid int, comm string, patience time.Duration) []process {
	deadline := time.Now().Add(patience)
	for {
		kids := descendants(pid)
		if slices.ContainsFunc(kids, named(comm)) || time.Now().After(deadline) {
			return kids
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// named is whether a process's command is comm.
func named(comm string) func(process) bool {
	return func(p process) bool { return p.comm == comm }
}
