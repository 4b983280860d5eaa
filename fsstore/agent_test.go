package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestActor(t *testing.T) {
	cfg := func(agents ...storage.Agent) *storage.Config { return &storage.Config{Agents: agents} }
	lead, ops, coder := storage.Agent{ID: "lead", Type: storage.AgentHuman}, storage.Agent{ID: "ops", Type: storage.AgentHuman}, storage.Agent{ID: "coder", Type: storage.AgentAI}
	for _, tc := range []struct {
		name  string
		cfg   *storage.Config
		given string
		want  string
		kind  error
	}{
		{"the only human", cfg(lead, coder), "", "lead", nil},
		{"given wins", cfg(lead, ops, coder), "ops", "ops", nil},
		{"an AI agent may be named", cfg(lead, coder), "coder", "coder", nil},
		{"two humans", cfg(lead, ops, coder), "", "", storage.ErrAmbiguous},
		{"no human", cfg(coder), "", "", storage.ErrNotFound},
		{"unknown", cfg(lead), "ghost", "", storage.ErrNotFound},
	} {
		got, err := tc.cfg.Actor(tc.given)
		if got != tc.want || (tc.kind == nil) != (err == nil) || (tc.kind != nil && !errors.Is(err, tc.kind)) {
			t.Errorf("%s: Actor(%q) = %q, %v; want %q, %v", tc.name, tc.given, got, err, tc.want, tc.kind)
		}
	}
	if _, err := cfg(lead).Actor("../x"); err == nil {
		t.Error("Actor accepted a malformed id")
	}
}

func TestWithoutAgentEntry(t *testing.T) {
	const head = "# comment\n[project]\nname = \"p\"\n\n# Agents:\n"
	const a = "\n[[agents]]\nid = \"a\"\ntype = \"human\"\n"
	const b = "\n[[agents]]\n# b's own comment\nid = \"b\"\ntype = \"ai\"\nparent = \"a\"\n"
	const c = "\n[[agents]]\nid = \"c\"\ntype = \"ai\"\n\n[agents.env]\nX = \"1\"\n"
	const tail = "\n[defaults]\ndurability = \"none\"\n"
	for _, tc := range []struct {
		name, in, agent, want string
	}{
		{"last", head + a + b, "b", head + a + "\n"},
		{"middle", head + a + b + c + tail, "b", head + a + "\n" + strings.TrimPrefix(c, "\n") + tail},
		{"with a subtable", head + a + c + tail, "c", head + a + "\n" + strings.TrimPrefix(tail, "\n")},
		{"first", head + a + tail, "a", head + "\n" + strings.TrimPrefix(tail, "\n")},
	} {
		cfg, err := storage.ParseConfig("config.toml", []byte(tc.in))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, err := withoutAgentEntry([]byte(tc.in), cfg, tc.agent)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if string(got) != tc.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}

func TestReissuePasskey(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	if _, err := s.AddAgent(ctx, NewAgent{ID: "lead", Type: storage.AgentHuman}); err != nil {
		t.Fatal(err)
	}
	if path, _ := s.files.PasskeyPath("lead"); fileExists(path) {
		t.Error("a human got a passkey")
	}
	old, err := s.AddAgent(ctx, NewAgent{ID: "coder", Type: storage.AgentAI})
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := s.ReissuePasskey(ctx, "coder", false)
	if err != nil || fresh.Saved != "" {
		t.Fatal(fresh, err)
	}
	if err := s.checkPasskey("coder", old); !errors.Is(err, storage.ErrBadPasskey) {
		t.Errorf("old passkey after reissue: %v, want ErrBadPasskey", err)
	}
	if err := s.checkPasskey("coder", fresh.Passkey); err != nil {
		t.Errorf("new passkey: %v", err)
	}
	if _, err := s.ReissuePasskey(ctx, "lead", false); !errors.Is(err, errNotAI) {
		t.Errorf("reissue for a human: %v, want ErrNotAI", err)
	}
	if _, err := s.ReissuePasskey(ctx, "ghost", false); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("reissue for nobody: %v, want ErrNotFound", err)
	}
	// doctor reports the AI agent once its hash is gone, and only it
	path, _ := s.files.PasskeyPath("coder")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	problems, err := s.Doctor(ctx, true)
	if err != nil || len(problems) != 1 || !strings.HasSuffix(problems[0].Reason, "run aipm agent passkey coder") || problems[0].Repaired {
		t.Errorf("doctor without coder's passkey: %v, %v", problems, err)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestReissueKeepsSavedPasskey: a passkey saved for aipm watch is replaced
// by the next one issued, asked or not, so that the watcher's starts keep
// authenticating; a saved passkey that is not the agent's is stale.
func TestReissueKeepsSavedPasskey(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	if _, err := s.AddAgent(ctx, NewAgent{ID: "coder", Type: storage.AgentAI}); err != nil {
		t.Fatal(err)
	}
	if got := s.SavedPasskeyOf("coder"); got != savedNone {
		t.Errorf("saved passkey before one is saved: %s", got)
	}
	saved, err := s.ReissuePasskey(ctx, "coder", true)
	if err != nil || saved.Saved == "" || saved.Replaced || s.SavedPasskeyOf("coder") != savedCurrent {
		t.Fatalf("reissue with save: %+v, %v; saved passkey %s", saved, err, s.SavedPasskeyOf("coder"))
	}
	again, err := s.ReissuePasskey(ctx, "coder", false)
	if err != nil || again.Saved != saved.Saved || !again.Replaced || s.SavedPasskeyOf("coder") != savedCurrent {
		t.Fatalf("reissue of a saved passkey: %+v, %v; saved passkey %s", again, err, s.SavedPasskeyOf("coder"))
	}
	if _, err := s.SaveCredential("coder", again.Passkey); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(saved.Saved, []byte(saved.Passkey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := s.SavedPasskeyOf("coder"); got != SavedStale {
		t.Errorf("a saved passkey that is not the agent's: %s, want stale", got)
	}
	if _, err := s.ReissuePasskey(ctx, "coder", true); err != nil {
		t.Fatal(err)
	}
}
