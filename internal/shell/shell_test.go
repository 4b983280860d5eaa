package shell

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"aipm/internal/testenv"
)

// TestQuote: a word a shell reads as itself stays bare; anything else is
// single-quoted, and sh reads it back as it was.
func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"status":            "status",
		"/srv/p-1_x.y:z=@%": "/srv/p-1_x.y:z=@%",
		"":                  "''",
		"two words":         "'two words'",
		"it's":              `'it'\''s'`,
		"$HOME":             "'$HOME'",
		"りんご":               "'りんご'",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %q, want %q", in, got, want)
		}
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		testenv.SkipMissing(t, "sh on PATH")
	}
	for _, in := range []string{"it's", "a\nb", "$(x) `y` \\ \"z\""} {
		out, err := exec.Command(sh, "-c", "printf %s "+Quote(in)).Output()
		if err != nil || string(out) != in {
			t.Errorf("sh reads Quote(%q) back as %q, %v", in, out, err)
		}
	}
}

// TestLookPath: the first regular executable file of that name on the
// given PATH value; a directory, a plain file or an empty entry is passed
// over.
func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	mk := func(rel string, mode os.FileMode) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mk("plain/aipm", 0o644)
	if err := os.MkdirAll(filepath.Join(dir, "isdir", "aipm"), 0o755); err != nil {
		t.Fatal(err)
	}
	exe := mk("bin/aipm", 0o755)
	path := filepath.Join(dir, "plain") + "::" + filepath.Join(dir, "isdir") + ":" + filepath.Join(dir, "bin")
	if got := LookPath(path, "aipm"); got != exe {
		t.Errorf("LookPath = %q, want %q", got, exe)
	}
	if got := LookPath(path, "codex"); got != "" {
		t.Errorf("LookPath of a missing program = %q", got)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(exe, link); err != nil {
		t.Fatal(err)
	}
	if !SameFile(link, exe) || SameFile(exe, filepath.Join(dir, "plain", "aipm")) || SameFile(exe, filepath.Join(dir, "none")) {
		t.Error("SameFile: a link is its target, two files are two, a missing one is none")
	}
}
