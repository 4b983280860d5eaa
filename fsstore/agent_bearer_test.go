package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func init() { helperRoles["bearer-wrong"] = helperBearerWrong }

// wrongBearer is a token of a passkey's form that is no agent's passkey.
func wrongBearer(i int) string {
	var key [32]byte
	copy(key[:], fmt.Sprintf("wrong %d", i))
	return passkeyPrefix + base64.RawURLEncoding.EncodeToString(key[:])
}

// readBearerFailures reads bearer.json (none: no failures).
func readBearerFailures(t *testing.T, s *Store) map[string]storage.AuthFailures {
	t.Helper()
	var doc bearerFailures
	if err := s.files.ReadDoc(s.files.BearerPath(), &doc); err != nil && !errors.Is(err, storage.ErrNotFound) {
		t.Fatal(err)
	}
	return doc.Agents
}

// A wrong bearer token counts against every agent it was compared with;
// an agent in back-off is not compared with (its own right passkey waits
// too); a right passkey ends its agent's count only; a token that cannot
// be a passkey is compared with none and counts for none.
func TestAgentOfPasskeyBackoff(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		if _, err := s.AddAgent(ctx, NewAgent{ID: id, Type: storage.AgentAI}); err != nil {
			t.Fatal(err)
		}
	}
	keyA, keyB := mustPasskey(t, s, "a"), mustPasskey(t, s, "b")
	cfg, err := s.files.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s.setClock(func() time.Time { return now })

	for _, token := range []string{"${AIPM_PASSKEY}", "aipk_short", strings.Repeat("x", 43)} {
		if _, err := s.AgentOfPasskey(ctx, cfg, token); !errors.Is(err, storage.ErrBadPasskey) {
			t.Fatalf("token %q: %v, want ErrBadPasskey", token, err)
		}
	}
	if got := readBearerFailures(t, s); len(got) != 0 {
		t.Fatalf("tokens of no passkey's form were counted: %v", got)
	}

	for i := range storage.FreeFailures + 1 {
		if _, err := s.AgentOfPasskey(ctx, cfg, wrongBearer(i)); !errors.Is(err, storage.ErrBadPasskey) {
			t.Fatalf("wrong token %d: %v, want ErrBadPasskey", i, err)
		}
	}
	got := readBearerFailures(t, s)
	if got["a"].Failures != storage.FreeFailures+1 || got["b"].Failures != storage.FreeFailures+1 {
		t.Fatalf("after %d wrong tokens: %v", storage.FreeFailures+1, got)
	}
	var be *storage.BackoffError
	for _, token := range []string{wrongBearer(99), keyA} {
		if _, err := s.AgentOfPasskey(ctx, cfg, token); !errors.As(err, &be) || !be.Until.Equal(now.Add(time.Second)) {
			t.Fatalf("in back-off: %v, want a BackoffError until %v", err, now.Add(time.Second))
		}
	}
	if strings.Contains(be.Error(), `"a"`) || strings.Contains(be.Error(), `"b"`) {
		t.Fatalf("a bearer token's back-off names an agent: %v", be)
	}
	if again := readBearerFailures(t, s); again["a"] != got["a"] || again["b"] != got["b"] {
		t.Fatalf("a refused token was counted: %v, was %v", again, got)
	}

	now = now.Add(time.Second)
	if agent, err := s.AgentOfPasskey(ctx, cfg, keyA); err != nil || agent != "a" {
		t.Fatalf("a's passkey after the wait: %q, %v", agent, err)
	}
	got = readBearerFailures(t, s)
	if _, ok := got["a"]; ok || got["b"].Failures != storage.FreeFailures+1 {
		t.Fatalf("a's right passkey (compared with b's too) counted wrong: %v", got)
	}
	if agent, err := s.AgentOfPasskey(ctx, cfg, keyB); err != nil || agent != "b" {
		t.Fatalf("b's passkey: %q, %v", agent, err)
	}
	if _, err := os.Stat(s.files.BearerPath()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("no failure left, and bearer.json stays: %v", err)
	}
	if fi, err := os.Stat(s.files.BearerLockPath()); err != nil || fi.Mode().Perm() != storage.ModePrivateFile {
		t.Fatalf("bearer.lock: %v %v", fi, err)
	}
}

// helperBearerWrong waits for the file "go", then sends one wrong bearer
// token and prints "checked" (compared with the agent's passkey) or
// "backoff" (refused before).
func helperBearerWrong(h *helperProc) error {
	h.store.setClock(func() time.Time { return authClock })
	cfg, err := h.store.files.LoadConfig()
	if err != nil {
		return err
	}
	for {
		if _, err := os.Stat(filepath.Join(h.dir, "go")); err == nil {
			break
		}
		time.Sleep(100 * time.Microsecond)
	}
	_, err = h.store.AgentOfPasskey(h.ctx, cfg, wrongBearer(os.Getpid()))
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

// Many processes sending wrong bearer tokens at the same instant get no
// more comparisons than one guesser in turn (issue 34, item 14).
func TestAgentOfPasskeyConcurrent(t *testing.T) {
	s := newTestStore(t)
	if _, err := s.AddAgent(t.Context(), NewAgent{ID: "a", Type: storage.AgentAI}); err != nil {
		t.Fatal(err)
	}
	mustPasskey(t, s, "a")
	const procs = 12
	checked := concurrentGuesses(t, s, "bearer-wrong", procs)
	if want := storage.FreeFailures + 1; checked != want {
		t.Errorf("%d concurrent wrong tokens: %d were compared, want %d (as many as one guesser in turn)", procs, checked, want)
	}
	if got := readBearerFailures(t, s)["a"].Failures; got != storage.FreeFailures+1 {
		t.Errorf("bearer.json counts %d failures, want %d", got, storage.FreeFailures+1)
	}
}
