package fsstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveID(t *testing.T) {
	s := newTestStore(t)
	for _, id := range []string{"tsk_01M7YZWACRA0328GMTHNDHB18Z", "tsk_01M7YZWACRA0328GMTHNDHB190", "tsk_01M7YZWACRA0328GMTHNDHC000"} {
		if err := s.writeDoc(filepath.Join(s.CollectionDir(Tasks), id+".json"), Task{ID: id}, ModeFile); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		arg, want string
		kind      error
		msg       string // a part of the error
	}{
		{arg: "tsk_01M7YZWACRA0328GMTHNDHB18Z", want: "tsk_01M7YZWACRA0328GMTHNDHB18Z"},
		{arg: "01M7YZWACRA0328GMTHNDHB18Z", want: "tsk_01M7YZWACRA0328GMTHNDHB18Z"},
		{arg: "01m7yzwacra0328gmthndhb19", want: "tsk_01M7YZWACRA0328GMTHNDHB190"},
		{arg: "TSK_01M7YZWACRA0328GMTHNDHC", want: "tsk_01M7YZWACRA0328GMTHNDHC000"},
		{arg: "01M7YZWACRA0328GMTHNDHB", kind: ErrAmbiguous, msg: "matches 2 tasks (tsk_01M7YZWACRA0328GMTHNDHB18Z, tsk_01M7YZWACRA0328GMTHNDHB190)"},
		{arg: "tsk_0", kind: ErrAmbiguous, msg: "matches 3 tasks"},
		{arg: "02", kind: ErrNotFound, msg: `no task id starts with "02"`},
		{arg: "tsk_01M7YZWACRA0328GMTHNDHB191", kind: ErrNotFound, msg: "task tsk_01M7YZWACRA0328GMTHNDHB191 does not exist"},
		{arg: "", kind: ErrInvalid},
		{arg: "tsk_", kind: ErrInvalid},
		{arg: "../x", kind: ErrInvalid},
		{arg: "tsk_01I", kind: ErrInvalid},               // I is not Crockford base32
		{arg: strings.Repeat("0", 27), kind: ErrInvalid}, // longer than an id
		{arg: "msg_01M7YZ", kind: ErrInvalid},            // another kind of id
	} {
		got, err := s.ResolveID(Tasks, tc.arg)
		if tc.kind == nil {
			if err != nil || got != tc.want {
				t.Errorf("ResolveID(%q) = %q, %v; want %q", tc.arg, got, err, tc.want)
			}
			continue
		}
		if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("ResolveID(%q) = %q, %v; want a %v error containing %q", tc.arg, got, err, tc.kind, tc.msg)
		}
	}
}

func TestResolveIDListsAtMostTen(t *testing.T) {
	s := newTestStore(t)
	for i := 0; i < 12; i++ {
		id := NewID(PrefixTask)
		if err := s.writeDoc(filepath.Join(s.CollectionDir(Tasks), id+".json"), Task{ID: id}, ModeFile); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.ResolveID(Tasks, "tsk_")
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("an empty prefix: %v, want ErrInvalid", err)
	}
	_, err = s.ResolveID(Tasks, "0")
	if !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), "matches 12 tasks") || !strings.Contains(err.Error(), "and 2 more") {
		t.Fatalf("12 matches: %v", err)
	}
}

func TestActor(t *testing.T) {
	cfg := func(agents ...Agent) *Config { return &Config{Agents: agents} }
	lead, ops, coder := Agent{ID: "lead", Type: AgentHuman}, Agent{ID: "ops", Type: AgentHuman}, Agent{ID: "coder", Type: AgentAI}
	for _, tc := range []struct {
		name  string
		cfg   *Config
		given string
		want  string
		kind  error
	}{
		{"the only human", cfg(lead, coder), "", "lead", nil},
		{"given wins", cfg(lead, ops, coder), "ops", "ops", nil},
		{"an AI agent may be named", cfg(lead, coder), "coder", "coder", nil},
		{"two humans", cfg(lead, ops, coder), "", "", ErrAmbiguous},
		{"no human", cfg(coder), "", "", ErrNotFound},
		{"unknown", cfg(lead), "ghost", "", ErrNotFound},
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
		cfg, err := ParseConfig("config.toml", []byte(tc.in))
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
	if _, err := s.AddAgent(ctx, NewAgent{ID: "lead", Type: AgentHuman}); err != nil {
		t.Fatal(err)
	}
	if path, _ := s.PasskeyPath("lead"); fileExists(path) {
		t.Error("a human got a passkey")
	}
	old, err := s.AddAgent(ctx, NewAgent{ID: "coder", Type: AgentAI})
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := s.ReissuePasskey(ctx, "coder")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.checkPasskey("coder", old); !errors.Is(err, ErrBadPasskey) {
		t.Errorf("old passkey after reissue: %v, want ErrBadPasskey", err)
	}
	if err := s.checkPasskey("coder", fresh); err != nil {
		t.Errorf("new passkey: %v", err)
	}
	if _, err := s.ReissuePasskey(ctx, "lead"); !errors.Is(err, ErrNotAI) {
		t.Errorf("reissue for a human: %v, want ErrNotAI", err)
	}
	if _, err := s.ReissuePasskey(ctx, "ghost"); !errors.Is(err, ErrNotFound) {
		t.Errorf("reissue for nobody: %v, want ErrNotFound", err)
	}
	// doctor reports the AI agent once its hash is gone, and only it
	path, _ := s.PasskeyPath("coder")
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

// An entry that would make the config invalid is refused without a line
// number: the line would be in text that was never written.
func TestAddAgentInvalidEntry(t *testing.T) {
	s := newTestStore(t)
	_, err := s.AddAgent(context.Background(), NewAgent{ID: "bot", Type: AgentAI, Parent: "nobody"})
	if !errors.Is(err, ErrInvalid) || err.Error() != `agent "bot" cannot be added: agent "bot": parent "nobody" is not a configured agent: add it or fix the id` {
		t.Errorf("AddAgent with an unknown parent: %v", err)
	}
	if cfg, err := s.LoadConfig(); err != nil || len(cfg.Agents) != 0 {
		t.Errorf("config after the refusal: %+v, %v", cfg, err)
	}
}
