package demo

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"aipm/internal/shell"
)

// The demo's run needs the command tree and a watcher (the testscripts
// demo, demo_group and demo_web in cmd/aipm run it whole); these test what
// it prints and decides on its own.

func newTestDemo(colour bool) (*demo, *strings.Builder) {
	var out strings.Builder
	return &demo{ctx: context.Background(), o: Options{Stdout: &out, Colour: colour}, told: map[string]bool{}}, &out
}

// TestCheck: the languages and scenarios the flags take, and one sentence
// naming the value for any other.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		lang, scenario, err string
	}{
		{"en", "default", ""},
		{"ja", "group", ""},
		{"fr", "default", `demo: --lang must be en or ja, not "fr"`},
		{"en", "solo", `demo: --scenario must be default or group, not "solo"`},
		{"", "", `demo: --lang must be en or ja, not ""`},
	} {
		err := Check(tc.lang, tc.scenario)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("Check(%q, %q) = %v, want nil", tc.lang, tc.scenario, err)
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("Check(%q, %q) = %v, want %q", tc.lang, tc.scenario, err, tc.err)
		}
	}
	for lang := range demoGames {
		if _, ok := groupGames[lang]; !ok {
			t.Errorf("--lang %s has no group game", lang)
		}
	}
}

// TestTranscriptHidesPasskeys: no passkey reaches the transcript, whatever
// prints it; colour only when asked for.
func TestTranscriptHidesPasskeys(t *testing.T) {
	d, out := newTestDemo(false)
	d.printf("passkey aipk_AbC-12_x for coder\n")
	d.note("saved aipk_zz9 there")
	if strings.Contains(out.String(), "aipk_AbC") || strings.Contains(out.String(), "aipk_zz9") {
		t.Errorf("a passkey reached the transcript:\n%s", out)
	}
	if !strings.Contains(out.String(), "aipk_… (not shown)") || strings.Contains(out.String(), "\x1b[") {
		t.Errorf("transcript without colour:\n%q", out)
	}
	c, coloured := newTestDemo(true)
	c.note("hello")
	if got := coloured.String(); got != "\n\x1b[2m# hello\x1b[0m\n" {
		t.Errorf("a coloured note is %q", got)
	}
}

// TestExplainOnce: each idea is explained the first time it is named only.
func TestExplainOnce(t *testing.T) {
	d, out := newTestDemo(false)
	d.explain("watcher")
	d.explain("watcher", "interrupt")
	d.explain("interrupt")
	want := "# " + demoIdeas["watcher"] + "\n# " + demoIdeas["interrupt"] + "\n"
	if out.String() != want {
		t.Errorf("explained:\n%s\nwant\n%s", out, want)
	}
}

// TestWatcherLog: the watcher's lines in the transcript, without the run
// and log paths or an empty task, and with the idea a line shows explained
// before it.
func TestWatcherLog(t *testing.T) {
	d, out := newTestDemo(false)
	log := slog.New(&demoLog{d: d})
	log.Info("watching", "dir", "/x")
	log.Info("agent started", "agent", "coder", "purpose", "task", "task", "tsk_1", "run", "r1", "log", "/x/log")
	log.Info("agent started", "agent", "reviewer", "purpose", "chat", "task", "")
	log.Debug("not shown")
	want := "# " + demoIdeas["task session"] + "\n" +
		"  watch | agent started agent=coder purpose=task task=tsk_1\n" +
		"# " + demoIdeas["chat session"] + "\n" +
		"  watch | agent started agent=reviewer purpose=chat\n"
	if out.String() != want {
		t.Errorf("watcher log:\n%s\nwant\n%s", out, want)
	}
}

// TestTryNext: the closing steps use the word that runs this aipm, and
// name the kept project only when it is kept.
func TestTryNext(t *testing.T) {
	for _, kept := range []bool{true, false} {
		d, out := newTestDemo(false)
		d.tryNext("/tmp/aipm demo", "go run ./cmd/aipm", kept)
		if !strings.Contains(out.String(), "go run ./cmd/aipm --dir ~/myteam init --name myteam") {
			t.Errorf("no init step:\n%s", out)
		}
		if got := strings.Contains(out.String(), "--dir '/tmp/aipm demo' status"); got != kept {
			t.Errorf("kept %v: the kept project's status step shown: %v\n%s", kept, got, out)
		}
	}
}

// TestAipmWord: how the user runs this aipm from where they stand.
func TestAipmWord(t *testing.T) {
	for _, tc := range []struct {
		exe    string
		onPath bool
		want   string
	}{
		{"/usr/local/bin/aipm", true, "aipm"},
		{filepath.Join(os.TempDir(), "go-build123", "b001", "exe", "aipm"), false, "go run ./cmd/aipm"},
		{"/opt/my tools/aipm", false, "'/opt/my tools/aipm'"},
	} {
		if got := aipmWord(tc.exe, tc.onPath); got != tc.want {
			t.Errorf("aipmWord(%q, %v) = %q, want %q", tc.exe, tc.onPath, got, tc.want)
		}
	}
}

// TestAipmOnPath: "aipm" on PATH names the demo's binary while it runs
// (through a link when the binary has another name), and PATH is as it
// was afterwards.
func TestAipmOnPath(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "aipm.test")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := t.TempDir() // no aipm there
	t.Setenv("PATH", before)
	onPath, restore, err := aipmOnPath(exe)
	if err != nil {
		t.Fatal(err)
	}
	if onPath {
		t.Error("no aipm was on PATH, but aipmOnPath says one was")
	}
	found := shell.LookPath(os.Getenv("PATH"), "aipm")
	if found == "" || !shell.SameFile(found, exe) {
		t.Errorf("aipm on PATH is %q, want %s", found, exe)
	}
	restore()
	if got := os.Getenv("PATH"); got != before {
		t.Errorf("PATH after restore = %q, want %q", got, before)
	}
	if _, err := os.Stat(filepath.Dir(found)); err == nil {
		t.Errorf("the link's directory %s is left behind", filepath.Dir(found))
	}
}

// TestUntil: a condition met ends the wait; a cancelled demo ends it with
// the context's error.
func TestUntil(t *testing.T) {
	d, _ := newTestDemo(false)
	n := 0
	if err := d.until("three checks", func() bool { n++; return n == 3 }); err != nil || n != 3 {
		t.Errorf("until: %v after %d checks", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d.ctx = ctx
	start := time.Now()
	if err := d.until("never", func() bool { return false }); err != context.Canceled || time.Since(start) > demoWait/2 {
		t.Errorf("until after cancel: %v", err)
	}
}
