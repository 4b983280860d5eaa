package fsstore

import (
	"aipm/fsstore/internal/storage"
	"aipm/internal/helperproc"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func init() { helperRoles["auth-wrong"] = helperAuthWrong }

// authClock is the frozen clock of the auth-wrong helpers: every attempt
// happens at the same instant, so the back-off after the fourth failure
// holds whatever the machine's speed.
var authClock = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// helperAuthWrong waits for the file "go", then tries agent arg's passkey
// with a wrong one and prints "checked" (the passkey was checked) or
// "backoff" (refused before checking).
func helperAuthWrong(h *helperProc) error {
	h.store.setClock(func() time.Time { return authClock })
	for {
		if _, err := os.Stat(filepath.Join(h.dir, "go")); err == nil {
			break
		}
		time.Sleep(100 * time.Microsecond)
	}
	err := h.store.checkCredential(h.ctx, h.arg, "wrong-passkey-"+strings.Repeat("x", 20))
	switch {
	case errors.Is(err, storage.ErrBackoff):
		fmt.Fprintln(h.out, "backoff")
	case errors.Is(err, storage.ErrBadPasskey):
		fmt.Fprintln(h.out, "checked")
	default:
		return fmt.Errorf("unexpected answer: %v", err)
	}
	return nil
}

// Many processes guessing one agent's passkey at the same instant get no
// more checks than one guesser trying in turn: the free failures and the
// one that starts the wait (issue 21, item 10).
func TestBackoffConcurrent(t *testing.T) {
	s := newTestStore(t)
	if _, err := s.AddAgent(t.Context(), NewAgent{ID: "a", Type: storage.AgentAI}); err != nil {
		t.Fatal(err)
	}
	mustPasskey(t, s, "a")
	const procs = 12
	checked := concurrentGuesses(t, s, "auth-wrong", procs)
	if want := storage.FreeFailures + 1; checked != want {
		t.Errorf("%d concurrent wrong passkeys: %d were checked, want %d (as many as one guesser in turn)", procs, checked, want)
	}
}

// concurrentGuesses starts procs helper processes of mode (auth-wrong),
// each guessing agent a's passkey once, lets them go at the same instant,
// and returns how many were compared rather than backed off.
func concurrentGuesses(t *testing.T, s *Store, mode string, procs int) int {
	t.Helper()
	outs := make([]*bytes.Buffer, procs)
	var cmds []*exec.Cmd
	for i := range procs {
		outs[i] = &bytes.Buffer{}
		cmd := helperproc.Command(t, mode, s.files.ProjectDir(), "a", "1")
		cmd.Stdout = outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	time.Sleep(300 * time.Millisecond) // let them start; the count does not depend on it
	if err := os.WriteFile(filepath.Join(s.files.ProjectDir(), "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v", i, err)
		}
		if strings.TrimSpace(outs[i].String()) == "checked" {
			checked++
		}
	}
	return checked
}
