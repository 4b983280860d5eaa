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
	b := bearerBackoff{t: t, s: s, keyA: mustPasskey(t, s, "a"), keyB: mustPasskey(t, s, "b")}
	var err error
	if b.cfg, err = s.files.LoadConfig(); err != nil {
		t.Fatal(err)
	}
	b.now = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s.setClock(func() time.Time { return b.now })

	b.noFormCountsForNone()
	got := b.wrongTokensCountForEvery()
	b.backoffWaitsForRightToo(got)
	b.now = b.now.Add(time.Second)
	b.rightPasskeyEndsItsCount()
}

// bearerBackoff is TestAgentOfPasskeyBackoff's project: agents a and b,
// their passkeys, and the clock the store's back-off reads.
type bearerBackoff struct {
	t          *testing.T
	s          *Store
	cfg        *storage.Config
	keyA, keyB string
	now        time.Time
}

// noFormCountsForNone: a token that cannot be a passkey is compared with
// none and counts for none.
func (b *bearerBackoff) noFormCountsForNone() {
	for _, token := range []string{"${AIPM_PASSKEY}", "aipk_short", strings.Repeat("x", 43)} {
		if _, err := b.s.AgentOfPasskey(b.t.Context(), b.cfg, token); !errors.Is(err, storage.ErrBadPasskey) {
			b.t.Fatalf("token %q: %v, want ErrBadPasskey", token, err)
		}
	}
	if got := readBearerFailures(b.t, b.s); len(got) != 0 {
		b.t.Fatalf("tokens of no passkey's form were counted: %v", got)
	}
}

// wrongTokensCountForEvery: a wrong token counts against every agent it
// was compared with; it returns the counts.
func (b *bearerBackoff) wrongTokensCountForEvery() map[string]storage.AuthFailures {
	for i := range storage.FreeFailures + 1 {
		if _, err := b.s.AgentOfPasskey(b.t.Context(), b.cfg, wrongBearer(i)); !errors.Is(err, storage.ErrBadPasskey) {
			b.t.Fatalf("wrong token %d: %v, want ErrBadPasskey", i, err)
		}
	}
	got := readBearerFailures(b.t, b.s)
	if got["a"].Failures != storage.FreeFailures+1 || got["b"].Failures != storage.FreeFailures+1 {
		b.t.Fatalf("after %d wrong tokens: %v", storage.FreeFailures+1, got)
	}
	return got
}

// backoffWaitsForRightToo: an agent in back-off is not compared with (its
// own right passkey waits too), the refusal names no agent, and a refused
// token is not counted.
func (b *bearerBackoff) backoffWaitsForRightToo(got map[string]storage.AuthFailures) {
	var be *storage.BackoffError
	for _, token := range []string{wrongBearer(99), b.keyA} {
		if _, err := b.s.AgentOfPasskey(b.t.Context(), b.cfg, token); !errors.As(err, &be) || !be.Until.Equal(b.now.Add(time.Second)) {
			b.t.Fatalf("in back-off: %v, want a BackoffError until %v", err, b.now.Add(time.Second))
		}
	}
	if strings.Contains(be.Error(), `"a"`) || strings.Contains(be.Error(), `"b"`) {
		b.t.Fatalf("a bearer token's back-off names an agent: %v", be)
	}
	if again := readBearerFailures(b.t, b.s); again["a"] != got["a"] || again["b"] != got["b"] {
		b.t.Fatalf("a refused token was counted: %v, was %v", again, got)
	}
}

// rightPasskeyEndsItsCount: after the wait a right passkey ends its
// agent's count only; with no failure left bearer.json goes, and
// bearer.lock is private.
func (b *bearerBackoff) rightPasskeyEndsItsCount() {
	if agent, err := b.s.AgentOfPasskey(b.t.Context(), b.cfg, b.keyA); err != nil || agent != "a" {
		b.t.Fatalf("a's passkey after the wait: %q, %v", agent, err)
	}
	got := readBearerFailures(b.t, b.s)
	if _, ok := got["a"]; ok || got["b"].Failures != storage.FreeFailures+1 {
		b.t.Fatalf("a's right passkey (compared with b's too) counted wrong: %v", got)
	}
	if agent, err := b.s.AgentOfPasskey(b.t.Context(), b.cfg, b.keyB); err != nil || agent != "b" {
		b.t.Fatalf("b's passkey: %q, %v", agent, err)
	}
	if _, err := os.Stat(b.s.files.BearerPath()); !errors.Is(err, os.ErrNotExist) {
		b.t.Fatalf("no failure left, and bearer.json stays: %v", err)
	}
	if fi, err := os.Stat(b.s.files.BearerLockPath()); err != nil || fi.Mode().Perm() != storage.ModePrivateFile {
		b.t.Fatalf("bearer.lock: %v %v", fi, err)
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
