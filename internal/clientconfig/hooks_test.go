package clientconfig

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAipmHookRecognised: aipm's own hooks are "aipm hook ..." or an
// absolute path to aipm (quoted or not) followed by hook; nothing else.
func TestAipmHookRecognised(t *testing.T) {
	for cmd, want := range map[string]bool{
		"aipm hook --client claude":               true,
		"aipm hook":                               true,
		"  aipm hook --client codex":              true,
		"/usr/local/bin/aipm hook --client codex": true,
		"'/opt/my tools/aipm' hook --client x":    true,
		`/opt/my\ tools/aipm hook`:                true,
		"aipm hooks":                              false,
		"aipm serve":                              false,
		"bin/aipm hook":                           false,
		"/usr/bin/notaipm hook":                   false,
		"echo aipm hook":                          false,
		"":                                        false,
		"aipm-hook --client claude":               true,
		"aipm-hook --client claude --wake":        true,
		"/opt/bin/aipm-hook --client codex":       true,
		"bin/aipm-hook --client codex":            false,
		"aipm-hooks --client codex":               false,
	} {
		if got := IsAipmHook(cmd); got != want {
			t.Errorf("IsAipmHook(%q) = %v, want %v", cmd, got, want)
		}
	}
}

// TestHookCommandQuoted: a command word that needs quoting is quoted for
// the shell, and the result is still recognised as aipm's.
func TestHookCommandQuoted(t *testing.T) {
	for word, want := range map[string]string{
		"aipm":                "aipm hook --client claude",
		"/usr/local/bin/aipm": "/usr/local/bin/aipm hook --client claude",
		"/opt/it's here/aipm": `'/opt/it'\''s here/aipm' hook --client claude`,
		"/home/x/プロジェクト/aipm": "'/home/x/プロジェクト/aipm' hook --client claude",
		"aipm-hook":           "aipm-hook --client claude",
		"/opt/bin/aipm-hook":  "/opt/bin/aipm-hook --client claude",
	} {
		got := HookCommand(word, "claude")
		if got != want {
			t.Errorf("HookCommand(%q) = %q, want %q", word, got, want)
		}
		if !IsAipmHook(got) {
			t.Errorf("HookCommand(%q) = %q is not recognised as aipm's hook", word, got)
		}
		if w, _ := firstShellWord(got); w != word {
			t.Errorf("the first word of %q is %q, want %q", got, w, word)
		}
	}
}

// TestHookWord: aipm's hooks run aipm-hook when it is on PATH or beside
// the aipm the entries name, else aipm hook.
func TestHookWord(t *testing.T) {
	dir := t.TempDir()
	aipmPath := filepath.Join(dir, "aipm")
	if err := os.WriteFile(aipmPath, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir() // nothing there
	if got := HookWord(empty, aipmPath); got != aipmPath {
		t.Errorf("no aipm-hook: HookWord = %q, want %q", got, aipmPath)
	}
	if got := HookWord(empty, "aipm"); got != "aipm" {
		t.Errorf("no aipm-hook: HookWord = %q, want aipm", got)
	}
	beside := filepath.Join(dir, "aipm-hook")
	if err := os.WriteFile(beside, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := HookWord(empty, aipmPath); got != beside {
		t.Errorf("aipm-hook beside aipm: HookWord = %q, want %q", got, beside)
	}
	if got := HookWord(dir, "aipm"); got != "aipm-hook" {
		t.Errorf("aipm-hook on PATH: HookWord = %q, want aipm-hook", got)
	}
}
