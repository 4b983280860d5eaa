package testenv

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// goSkip finds a skip in a Go test (t.Skip, t.Skipf, t.SkipNow, on any
// testing value); scriptSkip one in a testscript (skip, [condition] skip),
// and missingProgram the one form a testscript may skip in: for a program
// this machine lacks, saying which ([!exec:git] skip 'needs git').
var (
	goSkip         = regexp.MustCompile(`\.Skip(f|Now)?\(`)
	scriptSkip     = regexp.MustCompile(`^\s*(\[[^\]]*\]\s*)*skip\b`)
	missingProgram = regexp.MustCompile(`^\s*\[!exec:[^\]]+\]\s*skip\s+'[^']+'\s*$`)
)

// forbiddenSkip says whether line of a test file (a Go test when goTest)
// skips other than as this package allows.
func forbiddenSkip(line string, goTest bool) bool {
	if goTest {
		return goSkip.MatchString(line)
	}
	return scriptSkip.MatchString(line) && !missingProgram.MatchString(line)
}

// TestNoOtherSkips fails on any skip in the repository's tests but the two
// of this package (a skip names a missing environment or the -short run)
// and a testscript's skip for a missing program. third_party holds
// vendored code with its own tests, not aipm's.
func TestNoOtherSkips(t *testing.T) {
	root := repoRoot(t)
	self, _ := filepath.Abs(".")
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "third_party" || path == self) {
				return filepath.SkipDir
			}
			return nil
		}
		goTest := strings.HasSuffix(path, "_test.go")
		if !goTest && !strings.HasSuffix(path, ".txtar") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		for i, line := range strings.Split(string(data), "\n") {
			if forbiddenSkip(line, goTest) {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d: %s\n\tskip only through testenv.SkipMissing (naming what this machine lacks) or testenv.SkipIfShort; in a testscript, only [!exec:program] skip 'why'", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatalf("no test files found under %s", root)
	}
}

// needsGuard is what a testscript line needs this machine to have, beyond
// go and the basics: the programs it runs (exec, exits) that a fresh
// machine with only Go lacks, and the sshd command's (a loopback sshd,
// internal/sshtest). Each must be guarded by [!exec:PROGRAM] skip, so that
// there the script skips naming it rather than fails.
func needsGuard(line string) []string {
	f := strings.Fields(line)
	for len(f) > 0 && strings.HasPrefix(f[0], "[") {
		f = f[1:] // conditions
	}
	if len(f) > 0 && f[0] == "!" {
		f = f[1:]
	}
	switch {
	case len(f) >= 2 && f[0] == "exec":
		f = f[1:]
	case len(f) >= 3 && f[0] == "exits":
		f = f[2:]
	case len(f) >= 1 && f[0] == "sshd":
		return []string{"ssh", "ssh-keygen", "/usr/sbin/sshd"}
	default:
		return nil
	}
	switch f[0] {
	case "jq", "node", "npm", "ssh", "ssh-keygen", "/usr/sbin/sshd", "chromium", "chromium-browser", "google-chrome":
		return []string{f[0]}
	}
	return nil
}

// TestScriptsGuardPrograms: a testscript that runs a program a machine
// with only Go lacks (jq, node, ssh, sshd, chromium) skips without it, as
// [!exec:PROGRAM] skip 'needs PROGRAM', so that the README's test command
// passes on a fresh machine.
func TestScriptsGuardPrograms(t *testing.T) {
	scripts, err := filepath.Glob(filepath.Join(repoRoot(t), "testdata", "script", "*.txtar"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no testscripts found: %v", err)
	}
	for _, path := range scripts {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		script, _, _ := strings.Cut(string(data), "\n-- ") // the script, not its files
		guarded := map[string]bool{}
		for _, line := range strings.Split(script, "\n") {
			if m := guard.FindStringSubmatch(line); m != nil {
				guarded[m[1]] = true
			}
		}
		for i, line := range strings.Split(script, "\n") {
			for _, prog := range needsGuard(line) {
				if !guarded[prog] {
					t.Errorf("%s:%d: %s\n\truns %s without [!exec:%s] skip 'needs %s' in the script", filepath.Base(path), i+1, strings.TrimSpace(line), prog, prog, prog)
				}
			}
		}
	}
}

// guard is a testscript's skip for a missing program, capturing it.
var guard = regexp.MustCompile(`^\s*\[!exec:([^\]]+)\]\s*skip\s+'[^']+'\s*$`)

// TestNeedsGuard: the lines that need a guard, and only those.
func TestNeedsGuard(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{`exec jq -e . out.json`, []string{"jq"}},
		{`[exec:jq] exec jq . .mcp.json`, []string{"jq"}},
		{`! exec ssh -F cfg home true`, []string{"ssh"}},
		{`exits 2 node client.mjs`, []string{"node"}},
		{`sshd SSHCMD`, []string{"ssh", "ssh-keygen", "/usr/sbin/sshd"}},
		{`exec aipm init`, nil},
		{`exec git init`, nil},
		{`stdout 'jq'`, nil},
		{`# exec jq in a comment`, nil},
	} {
		if got := needsGuard(tc.line); !slices.Equal(got, tc.want) {
			t.Errorf("needsGuard(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
}

// TestForbiddenSkip: the patterns find what they must and only that.
func TestForbiddenSkip(t *testing.T) {
	for _, tc := range []struct {
		line   string
		goTest bool
		want   bool
	}{
		{`t.Skip("slow")`, true, true},
		{`	b.Skipf("no FIFOs: %v", err)`, true, true},
		{`t.SkipNow()`, true, true},
		{`testenv.SkipMissing(t, "FIFOs")`, true, false},
		{`testenv.SkipIfShort(t, "starts processes")`, true, false},
		{`if t.Skipped() {`, true, false},
		{`skip 'no fifo'`, false, true},
		{`[!linux] skip 'linux only'`, false, true},
		{`[short] [!exec:git] skip 'slow'`, false, true},
		{`[!exec:git] skip`, false, true},
		{`[!exec:git] skip 'needs git'`, false, false},
		{`exec aipm skip`, false, false},
		{`stdout 'skipped'`, false, false},
	} {
		if got := forbiddenSkip(tc.line, tc.goTest); got != tc.want {
			t.Errorf("forbiddenSkip(%q, %v) = %v, want %v", tc.line, tc.goTest, got, tc.want)
		}
	}
}

// repoRoot is the directory of aipm's go.mod, above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}
