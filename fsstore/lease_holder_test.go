package fsstore

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"aipm/fsstore/internal/storage"
	"aipm/internal/testenv"
)

// A lease ends when its holder's process is gone (DESIGN section 18), for
// every reader at once and with no sweep: a session whose aipm serve
// exited (reaped, or a zombie), or whose pid another process holds now (a
// start of its own), ends its unkept leases while its document still says
// it is live; a kept lease stays. A session of an older aipm (no start)
// is any process at its pid.
func TestLeaseEndsWithItsProcess(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		testenv.SkipMissing(t, "the program sleep")
	}
	started := func() *exec.Cmd {
		cmd := exec.Command(sleep, "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	reaped := started()
	reapedStart := processStart(reaped.Process.Pid)
	reaped.Process.Kill()
	reaped.Wait()
	unreaped := started()
	unreapedStart := processStart(unreaped.Process.Pid)
	unreaped.Process.Kill()
	for deadline := time.Now().Add(10 * time.Second); !zombie(unreaped.Process.Pid); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the killed child never became a zombie")
		}
	}
	running := started()

	self, boot := os.Getpid(), bootID()
	for _, tc := range []struct {
		name  string
		pid   int
		start string
		holds bool
	}{
		{"this process", self, ownStart(), true},
		{"a running child", running.Process.Pid, processStart(running.Process.Pid), true},
		{"exited and reaped", reaped.Process.Pid, reapedStart, false},
		{"exited, a zombie", unreaped.Process.Pid, unreapedStart, false},
		{"its pid reused by this process", self, boot + "/1", false},
		{"an older aipm's session (no start)", self, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := leadAndCoder(t)
			key, err := s.AddAgent(ctx, NewAgent{ID: "tester", Type: storage.AgentAI})
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := s.files.LoadConfig()
			if err != nil {
				t.Fatal(err)
			}
			ses, _, err := s.Authenticate(ctx, cfg, "tester", key, "", storage.PurposeChat)
			if err != nil {
				t.Fatal(err)
			}
			for _, req := range []LeaseRequest{
				{Holder: "tester", Session: ses.ID, Paths: []string{"a.go"}},
				{Holder: "tester", Session: ses.ID, Keep: true, Paths: []string{"b.go"}},
			} {
				if _, err := s.TakeLease(ctx, cfg, req); err != nil {
					t.Fatal(err)
				}
			}
			// The session's process as recorded; its document says live.
			ses.PID, ses.PIDStart = tc.pid, tc.start
			path, _ := s.files.DocPath(storage.Sessions, ses.ID)
			if err := s.files.WriteDoc(path, ses, storage.ModePrivateFile); err != nil {
				t.Fatal(err)
			}

			want := []string{"b.go"}
			if tc.holds {
				want = []string{"a.go", "b.go"}
			}
			blocked, err := s.LeaseCheck("coder", []string{"a.go", "b.go"})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range blocked {
				got = append(got, c.Path)
			}
			if !slices.Equal(got, want) {
				t.Errorf("the leases blocking coder: %v, want %v", got, want)
			}
			live, err := s.Leases()
			if err != nil || len(live) != len(want) {
				t.Errorf("Leases() = %+v, %v; want %d", live, err, len(want))
			}
			_, err = s.TakeLease(ctx, cfg, LeaseRequest{Holder: "coder", Paths: []string{"a.go"}})
			if (err == nil) == tc.holds {
				t.Errorf("coder's take of a.go: %v (the holder's lease holds: %v)", err, tc.holds)
			}
		})
	}
}
