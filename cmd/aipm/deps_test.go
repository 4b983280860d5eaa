package main

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"aipm/internal/testenv"
)

// TestUserBinaryDeps: the aipm users run links what they run, not the
// bench's headless-Chromium driver (chromedp), its loopback sshd or the
// bench itself (cmd/aipm-bench has them). Their tests may use them.
func TestUserBinaryDeps(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		testenv.SkipMissing(t, "go on PATH (to list aipm's dependencies)")
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps ./cmd/aipm: %v\n%s", err, stderr)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) == 0 {
		t.Fatal("go list -deps ./cmd/aipm listed nothing")
	}
	for _, pkg := range pkgs {
		for _, banned := range []string{"github.com/chromedp", "aipm/internal/sshtest", "aipm/internal/browser", "aipm/internal/bench", "aipm/fsstore/fsstoretest"} {
			if pkg == banned || strings.HasPrefix(pkg, banned+"/") {
				t.Errorf("aipm links %s (wanted only by cmd/aipm-bench and tests)", pkg)
			}
		}
		if pkg == "encoding/gob" {
			t.Errorf("aipm links encoding/gob, whose initialisation every start of aipm pays (the fourth change in third_party/go-sdk/README.md)")
		}
	}
}

// maxCommandLines bounds cmd/aipm's non-test Go: the package is command
// wiring (one options struct and one run function per command); what a
// command does beyond parsing its flags and calling a package belongs in
// that package (internal/clientconfig, internal/launch, internal/demo, ...).
const maxCommandLines = 5500

// TestCommandPackageSize fails when cmd/aipm's non-test Go files hold more
// than maxCommandLines lines, naming the largest files: the ones to move
// code out of.
func TestCommandPackageSize(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	type file struct {
		name  string
		lines int
	}
	var files []file
	total := 0
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		n := bytes.Count(data, []byte("\n"))
		files = append(files, file{name, n})
		total += n
	}
	if len(files) == 0 {
		t.Fatal("no Go files in cmd/aipm")
	}
	if total <= maxCommandLines {
		return
	}
	slices.SortFunc(files, func(a, b file) int { return cmp.Or(b.lines-a.lines, strings.Compare(a.name, b.name)) })
	var largest []string
	for _, f := range files[:min(5, len(files))] {
		largest = append(largest, fmt.Sprintf("%s (%d)", f.name, f.lines))
	}
	t.Errorf("cmd/aipm holds %d lines of non-test Go, over %d: it is command wiring; move what is not into a package of its own. The largest files: %s",
		total, maxCommandLines, strings.Join(largest, ", "))
}
