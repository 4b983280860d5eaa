package main

import (
	"errors"
	"os/exec"
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
		for _, banned := range []string{"github.com/chromedp", "aipm/internal/sshtest", "aipm/internal/browser", "aipm/internal/bench"} {
			if pkg == banned || strings.HasPrefix(pkg, banned+"/") {
				t.Errorf("aipm links %s (wanted only by cmd/aipm-bench and tests)", pkg)
			}
		}
	}
}
