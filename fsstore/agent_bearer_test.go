package fsstore

import (
	"aipm/fsstore/internal/storage"
	"aipm/internal/helperproc"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func init() { helperRoles["bearer-guess"] = helperBearerGuess }

// wrongBearer is a token of a passkey's form that is no agent's passkey.
func wrongBearer(i int) string {
	var key [32]byte
	copy(key[:], fmt.Sprintf("wrong %d", i))
	return passkeyPrefix + base64.RawURLEncoding.EncodeToString(key[:])
}

// treeOf lists every file under dir with its size and modification time.
func treeOf(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %s\n", path, fi.Size(), fi.ModTime().Format(time.RFC3339Nano))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Issue 46, item 11: wrong bearer tokens lock no agent out. Many
// passkey-shaped guesses are each refused as no agent's passkey, write
// and lock nothing, and leave every agent's right passkey found at once,
// by this store and by a store that never saw it; a reissued passkey
// replaces the old one at once (the cached hash is the file's), and a
// token that cannot be a passkey is compared with none.
func TestAgentOfPasskeyGuessesLockNoOneOut(t *testing.T) {
	s := newTestStore(t)
	keys := map[string]string{}
	for _, id := range []string{"a", "b"} {
		if _, err := s.AddAgent(t.Context(), NewAgent{ID: id, Type: storage.AgentAI}); err != nil {
			t.Fatal(err)
		}
		keys[id] = mustPasskey(t, s, id)
	}
	cfg, err := s.files.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	before := treeOf(t, s.Root())
	for i := range 200 {
		for _, token := range []string{wrongBearer(i), "${AIPM_PASSKEY}", "aipk_short"} {
			if _, err := s.AgentOfPasskey(t.Context(), cfg, token); !errors.Is(err, storage.ErrBadPasskey) || errors.Is(err, storage.ErrBackoff) {
				t.Fatalf("guess %d (%.20s): %v, want ErrBadPasskey alone", i, token, err)
			}
		}
	}
	if after := treeOf(t, s.Root()); after != before {
		t.Fatalf("wrong tokens changed .ai-pm:\n%s---\n%s", before, after)
	}
	other, err := Open(s.ProjectDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []*Store{s, other} {
		for id, key := range keys {
			if agent, err := st.AgentOfPasskey(t.Context(), cfg, key); err != nil || agent != id {
				t.Fatalf("%s's passkey after 200 guesses: %q, %v", id, agent, err)
			}
		}
	}
	time.Sleep(30 * time.Millisecond) // past the stamp's racy window: the hash is cached
	for range 2 {
		if _, err := s.AgentOfPasskey(t.Context(), cfg, wrongBearer(1000)); !errors.Is(err, storage.ErrBadPasskey) {
			t.Fatal(err)
		}
	}
	re, err := s.ReissuePasskey(t.Context(), "a", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AgentOfPasskey(t.Context(), cfg, keys["a"]); !errors.Is(err, storage.ErrBadPasskey) {
		t.Fatalf("a's old passkey after a reissue: %v", err)
	}
	if agent, err := s.AgentOfPasskey(t.Context(), cfg, re.Passkey); err != nil || agent != "a" {
		t.Fatalf("a's new passkey: %q, %v", agent, err)
	}
}

// helperBearerGuess sends n wrong bearer tokens, then the passkey in the
// file arg, and prints the agent it was found to be (or the error).
func helperBearerGuess(h *helperProc) error {
	cfg, err := h.store.files.LoadConfig()
	if err != nil {
		return err
	}
	key, err := os.ReadFile(h.arg)
	if err != nil {
		return err
	}
	for {
		if _, err := os.Stat(filepath.Join(h.dir, "go")); err == nil {
			break
		}
		time.Sleep(100 * time.Microsecond)
	}
	for i := range h.n {
		if _, err := h.store.AgentOfPasskey(h.ctx, cfg, wrongBearer(os.Getpid()*1000+i)); !errors.Is(err, storage.ErrBadPasskey) {
			return fmt.Errorf("wrong token %d: %v", i, err)
		}
	}
	agent, err := h.store.AgentOfPasskey(h.ctx, cfg, string(key))
	if err != nil {
		fmt.Fprintln(h.out, err)
		return nil
	}
	fmt.Fprintln(h.out, agent)
	return nil
}

// Issue 46, item 11: processes that guess at the same instant, as many
// aipm serve --http of one project would, slow no agent: each of them,
// after its own 20 wrong tokens, finds the agent's right passkey at once.
func TestAgentOfPasskeyConcurrent(t *testing.T) {
	s := newTestStore(t)
	if _, err := s.AddAgent(t.Context(), NewAgent{ID: "a", Type: storage.AgentAI}); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(mustPasskey(t, s, "a")), 0o600); err != nil {
		t.Fatal(err)
	}
	const procs = 12
	outs := make([]*bytes.Buffer, procs)
	var cmds []*exec.Cmd
	for i := range procs {
		outs[i] = &bytes.Buffer{}
		cmd := helperproc.Command(t, "bearer-guess", s.files.ProjectDir(), keyFile, "20")
		cmd.Stdout = outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	time.Sleep(300 * time.Millisecond) // let them start; the answers do not depend on it
	if err := os.WriteFile(filepath.Join(s.files.ProjectDir(), "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v", i, err)
		}
		if got := strings.TrimSpace(outs[i].String()); got != "a" {
			t.Errorf("helper %d, after its guesses and the others': the right passkey gave %q, want agent a", i, got)
		}
	}
}
