package launch

import (
	"aipm/fsstore"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStarts: what agent list and doctor say aipm watch starts for an
// agent, and what it may do.
func TestStarts(t *testing.T) {
	for _, tc := range []struct {
		command     []string
		starts, may string
	}{
		{nil, "", ""},
		{[]string{"aipm", "launch", "claude"}, "claude", "edit files and run commands inside the project"},
		{[]string{"/opt/aipm", "launch", "codex", "--access", "read"}, "codex", "read the project and run commands that do not write; no edit"},
		{[]string{"aipm", "launch", "claude", "--access", "read"}, "claude", "read the project; no edit, no command"},
		{[]string{"aipm", "launch", "claude", "--access", "full"}, "claude", "do anything, without asking"},
		{[]string{"aipm", "launch", "nosuch"}, "aipm launch (invalid)", ""},
		{[]string{"aipm", "launch", "gemini"}, "gemini", "edit files inside the project and run commands (Gemini CLI's auto_edit, and its shell allowed by aipm's policy; no sandbox holds the commands)"},
		{[]string{"aipm", "sim"}, "aipm sim", ""},
		{[]string{"/usr/bin/python3", "agent.py"}, "python3", ""},
	} {
		starts, may := Starts(fsstore.Agent{ID: "a", Command: tc.command})
		if starts != tc.starts || may != tc.may {
			t.Errorf("Starts(%q) = %q, %q; want %q, %q", tc.command, starts, may, tc.starts, tc.may)
		}
	}
}

// TestMissing: one sentence, with how to install it, for a client that is
// not on PATH; nothing when it is.
func TestMissing(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "claude"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if msg := Missing(dir, Spec{Client: "claude"}); msg != "" {
		t.Errorf("claude on PATH: %q", msg)
	}
	msg := Missing(dir, Spec{Client: "codex"})
	if !strings.HasPrefix(msg, "codex is not on PATH") || !strings.Contains(msg, "npm install -g @openai/codex") {
		t.Errorf("codex missing: %q", msg)
	}
}
