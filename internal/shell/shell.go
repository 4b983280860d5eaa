// Package shell is how aipm names programs and arguments the way a POSIX
// shell reads them: where PATH finds a program, whether two paths name one
// file (the aipm on PATH, mcp-config's entries, the demo's agents), and an
// argument quoted so that a printed command line pastes into a shell.
package shell

import (
	"os"
	"path/filepath"
	"strings"
)

// LookPath is exec.LookPath over the given PATH value: the first regular,
// executable file called name.
func LookPath(path, name string) string {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// SameFile says whether paths a and b name one existing file.
func SameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// Quote quotes an argument so a printed command line can be pasted
// into a POSIX shell.
func Quote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
