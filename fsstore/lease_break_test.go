package fsstore

import (
	"aipm/internal/helperproc"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"aipm/fsstore/internal/storage"
	"aipm/internal/failpoint"
)

func init() { helperRoles["break-leases"] = helperBreakLeases }

// helperBreakLeases, as the human arg, breaks the leases on src: killed
// at the failpoint its environment names, it never returns.
func helperBreakLeases(h *helperProc) error {
	_, err := h.store.BreakLeases(h.ctx, h.arg, []string{"src"}, "taking over")
	return err
}

// TestBreakKilled: a breaker SIGKILLed after it wrote the tombstone (no
// one told) or after it told the holder (the tombstone still there) has
// ended the lease all the same; doctor reports the break, and the next
// write of the leases, or doctor --repair, tells the holder, exactly once,
// and drops the tombstone.
func TestBreakKilled(t *testing.T) {
	finishers := []struct {
		name   string
		finish func(t *testing.T, s *Store, cfg *storage.Config)
	}{
		{"by a take", func(t *testing.T, s *Store, cfg *storage.Config) {
			if _, err := s.TakeLease(context.Background(), cfg, LeaseRequest{Holder: "lead", Paths: []string{"docs"}}); err != nil {
				t.Fatal(err)
			}
		}},
		{"by doctor", func(t *testing.T, s *Store, _ *storage.Config) {
			if untold := untoldBreaks(t, s, true); len(untold) != 1 || !untold[0].Repaired {
				t.Fatalf("doctor --repair: %v; want the break repaired", untold)
			}
		}},
	}
	for _, c := range []struct {
		at         string
		toldBefore int
	}{{failpointBreakUntold, 0}, {failpointBreakUndropped, 1}} {
		for _, f := range finishers {
			t.Run(c.at+" "+f.name, func(t *testing.T) {
				s, cfg := leadAndCoder(t)
				held, err := s.TakeLease(context.Background(), cfg, LeaseRequest{Holder: "coder", Paths: []string{"src/parser"}, Reason: "parser work"})
				if err != nil {
					t.Fatal(err)
				}
				breakKilledAt(t, s, c.at)
				if leases, err := s.Leases(); err != nil || len(leases) != 0 {
					t.Fatalf("leases after the killed break: %+v, %v; want none (the lease ended at once)", leases, err)
				}
				if n := brokenNotes(t, s, held.ID); n != c.toldBefore {
					t.Fatalf("coder told %d times before the break was finished, want %d", n, c.toldBefore)
				}
				if untold := untoldBreaks(t, s, false); len(untold) != 1 || untold[0].Repaired || !strings.Contains(untold[0].Reason, held.ID) {
					t.Fatalf("doctor: %v; want the untold break of %s reported", untold, held.ID)
				}
				f.finish(t, s, cfg)
				for range 2 { // finished once: a second finisher tells no one again
					if n := brokenNotes(t, s, held.ID); n != 1 {
						t.Fatalf("coder told %d times, want once", n)
					}
					if untold := untoldBreaks(t, s, false); len(untold) != 0 {
						t.Fatalf("doctor after the break was finished: %v", untold)
					}
					if _, err := s.ReleaseLeases(context.Background(), "lead", nil); err != nil && !errors.Is(err, storage.ErrNotFound) {
						t.Fatal(err)
					}
				}
			})
		}
	}
}

// breakKilledAt runs a breaker of the leases on src, killed at failpoint
// at.
func breakKilledAt(t *testing.T, s *Store, at string) {
	t.Helper()
	cmd := helperproc.Command(t, "break-leases", s.files.ProjectDir(), "lead", "0")
	cmd.Env = append(cmd.Env, failpoint.Env+"="+at)
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the breaker did not die at %s: %v", at, err)
	}
}

// brokenNotes counts coder's notifications saying lead broke lease id.
func brokenNotes(t *testing.T, s *Store, id string) int {
	t.Helper()
	notes, _, _, err := s.FollowNotifications("coder", storage.Cursor{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, note := range notes {
		if strings.Contains(note.Message, "lead broke your lease "+id+" on src/parser: taking over.") && note.From == "lead" {
			n++
		}
	}
	return n
}

// untoldBreaks is what doctor (with repair or not) reports of leases.json.
func untoldBreaks(t *testing.T, s *Store, repair bool) []storage.Problem {
	t.Helper()
	problems, err := s.Doctor(context.Background(), repair)
	if err != nil {
		t.Fatal(err)
	}
	var out []storage.Problem
	for _, p := range problems {
		if p.Path == s.files.Rel(s.files.LeasesPath()) {
			out = append(out, p)
		}
	}
	return out
}

// TestBreakUntoldWaits: a holder the break cannot tell (its notifications
// unwritable) has its lease broken all the same, the break saying so; the
// tombstone counts against the holder, fails no one else's take, and the
// first write after the holder can be told tells it, once.
func TestBreakUntoldWaits(t *testing.T) {
	ctx := context.Background()
	s, cfg := leadAndCoder(t)
	held, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: "coder", Paths: []string{"src/parser"}, Reason: "parser work"})
	if err != nil {
		t.Fatal(err)
	}
	notes, err := s.files.NotificationsPath("coder")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(notes, 0o755); err != nil { // no file can be appended to there
		t.Fatal(err)
	}
	broken, err := s.BreakLeases(ctx, "lead", []string{"src"}, "taking over")
	if len(broken) != 1 || err == nil || !strings.Contains(err.Error(), "tell coder its lease "+held.ID) {
		t.Fatalf("break of a holder who cannot be told: %v, %v; want the lease broken and an error saying coder was not told", broken, err)
	}
	if leases, _ := s.Leases(); len(leases) != 0 {
		t.Fatalf("leases after the break: %+v; want none", leases)
	}
	var doc leasesDoc
	if err := s.files.ReadDoc(s.files.LeasesPath(), &doc); err != nil || len(doc.Broken) != 1 || measureLeases(&doc).by["coder"][0] != 1 {
		t.Fatalf("leases.json: %+v, %v; want the tombstone, counted as coder's", doc, err)
	}
	if _, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: "lead", Paths: []string{"docs"}}); err != nil {
		t.Fatalf("a take while a tombstone cannot be finished: %v", err)
	}
	if err := os.Remove(notes); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReleaseLeases(ctx, "lead", nil); err != nil {
		t.Fatal(err)
	}
	if n := brokenNotes(t, s, held.ID); n != 1 {
		t.Errorf("coder told %d times once it could be, want once", n)
	}
	if untold := untoldBreaks(t, s, false); len(untold) != 0 {
		t.Errorf("doctor after the break was finished: %v", untold)
	}
}

// TestEndLeasesUnwrittenEndsNothing: a break or a release whose write of
// leases.json does not go through (an editor that never stops saving it)
// ends nothing, and says so: no lease is returned as ended, and the lease
// is still live.
func TestEndLeasesUnwrittenEndsNothing(t *testing.T) {
	s, cfg := leadAndCoder(t)
	ctx := t.Context()
	held, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: "coder", Paths: []string{"src/parser"}})
	if err != nil {
		t.Fatal(err)
	}
	path := s.files.LeasesPath()
	s.setBeforeWrite(func(string) { // a save by rename, without any lock
		data, err := os.ReadFile(path)
		if err != nil {
			t.Error(err)
			return
		}
		if err := os.WriteFile(path+".swp", data, 0o644); err != nil {
			t.Error(err)
			return
		}
		if err := os.Rename(path+".swp", path); err != nil {
			t.Error(err)
		}
	})
	defer s.setBeforeWrite(nil)

	if ended, err := s.BreakLeases(ctx, "lead", []string{"src/parser"}, "taking over"); err == nil || ended != nil {
		t.Errorf("BreakLeases unwritten: %v, %v; want nothing ended and an error", ended, err)
	}
	if broken, err := s.BreakLease(ctx, "lead", held.ID, "taking over"); err == nil || broken.ID != "" {
		t.Errorf("BreakLease unwritten: %+v, %v; want nothing broken and an error", broken, err)
	}
	if ended, err := s.ReleaseLeases(ctx, "coder", []string{"src/parser"}); err == nil || ended != nil {
		t.Errorf("ReleaseLeases unwritten: %v, %v; want nothing ended and an error", ended, err)
	}
	s.setBeforeWrite(nil)
	if live, err := s.Leases(); err != nil || len(live) != 1 || live[0].ID != held.ID {
		t.Errorf("after the unwritten ends: %v, %v; want %s still live", live, err, held.ID)
	}
	if n := brokenNotes(t, s, held.ID); n != 0 {
		t.Errorf("coder was told of a break that did not happen (%d notifications)", n)
	}
}
