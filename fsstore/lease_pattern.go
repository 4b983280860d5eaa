package fsstore

import (
	"fmt"
	"path"
	"strings"
)

// A lease names paths of the project by patterns: slash-separated,
// relative to the project directory, each segment a literal name or a
// glob with * (any run of characters but /) and ? (one character but /).
// A pattern covers what it matches and everything below it: "src" and
// "src/*.go" both cover "src/main.go", the first also "src/cmd/x.go".
// "src/**", what git and editors write for everything below src, is taken
// as "src"; a ** anywhere else is refused.

// maxLeasePattern is the longest pattern a lease takes, in bytes, and
// maxLeaseSegment its longest name (NAME_MAX): comparing two globs costs
// the product of their names' lengths.
const (
	maxLeasePattern = 1024
	maxLeaseSegment = 255
)

// cleanLeasePattern returns p in the one form leases store and compare:
// cleaned, slash-separated, without a leading "./" or a trailing slash. It
// refuses, with a sentence saying what to give instead, an empty pattern,
// an absolute one, one that leaves the project (..), one inside .ai-pm,
// character classes ([...]), which aipm does not compare, and a ** that
// does not end the pattern (a trailing /** is dropped: the directory).
func cleanLeasePattern(p string) (string, error) {
	switch {
	case strings.TrimSpace(p) == "":
		return "", fmt.Errorf("an empty path: name a file, a directory or a glob relative to the project, like src/*.go")
	case len(p) > maxLeasePattern:
		return "", fmt.Errorf("a path of %d bytes: at most %d", len(p), maxLeasePattern)
	case strings.ContainsAny(p, "[]\\\x00"):
		return "", fmt.Errorf("%q: only * and ? are globs in a lease (no [...] classes or backslashes): name the files another way", p)
	case strings.HasPrefix(p, "/"):
		return "", fmt.Errorf("%q is absolute: give it relative to the project directory", p)
	}
	c := path.Clean(p)
	for strings.HasSuffix(c, "/**") {
		c = strings.TrimSuffix(c, "/**") // DIR/**, git's and editors' "everything below DIR": DIR covers it
	}
	if c == "**" {
		c = "."
	}
	segs := strings.Split(c, "/")
	for i, seg := range segs {
		switch {
		case strings.Contains(seg, "**"):
			if i == 0 {
				return "", fmt.Errorf("%q: ** is not a lease glob inside a path (a * stays within one directory): lease the directories the files are in, which cover everything below them", p)
			}
			return "", fmt.Errorf("%q: ** is not a lease glob inside a path (a * stays within one directory): lease the directory %s, which covers everything below it", p, strings.Join(segs[:i], "/"))
		case len(seg) > maxLeaseSegment:
			return "", fmt.Errorf("%q has a name of %d bytes: at most %d", p, len(seg), maxLeaseSegment)
		}
	}
	switch {
	case c == ".":
		return "", fmt.Errorf("%q names the whole project: name the files or directories you will change", p)
	case c == ".." || strings.HasPrefix(c, "../"):
		return "", fmt.Errorf("%q leaves the project: give a path inside it", p)
	case c == ".ai-pm" || strings.HasPrefix(c, ".ai-pm/"):
		return "", fmt.Errorf("%q is aipm's own state: lease the project's files instead", p)
	}
	return c, nil
}

// leasePatternsOverlap says whether some path is covered by both clean
// patterns a and b: segment by segment over the shorter one (what a
// pattern covers goes on below it), each pair of segments having a name
// in common.
func leasePatternsOverlap(a, b string) bool {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	for i := range min(len(as), len(bs)) {
		if !globsMeet(as[i], bs[i]) {
			return false
		}
	}
	return true
}

// leasePatternCovers says whether clean pattern p covers the clean path
// name (no globs in it).
func leasePatternCovers(p, name string) bool {
	ps, ns := strings.Split(p, "/"), strings.Split(name, "/")
	if len(ns) < len(ps) {
		return false
	}
	for i, seg := range ps {
		if ok, _ := path.Match(seg, ns[i]); !ok {
			return false
		}
	}
	return true
}

// globsMeet says whether two one-segment globs (* and ? only) match some
// name in common: f[i][j] is whether p[i:] and q[j:] do, filled from the
// ends. A * matches nothing, or takes one more character that the other
// side produces (a literal, a ?, or the other's * taking it too).
func globsMeet(p, q string) bool {
	if !strings.ContainsAny(p, "*?") && !strings.ContainsAny(q, "*?") {
		return p == q
	}
	pr, qr := []rune(p), []rune(q)
	f := make([][]bool, len(pr)+1)
	for i := range f {
		f[i] = make([]bool, len(qr)+1)
	}
	for i := len(pr); i >= 0; i-- {
		for j := len(qr); j >= 0; j-- {
			f[i][j] = globsMeetFrom(f, pr, qr, i, j)
		}
	}
	return f[0][0]
}

// globsMeetFrom is globsMeet's f[i][j], whether p[i:] and q[j:] match a
// name in common, from the cells after it (f[i+1][...], f[i][j+1]).
func globsMeetFrom(f [][]bool, p, q []rune, i, j int) bool {
	n, m := len(p), len(q)
	switch {
	case i == n && j == m:
		return true
	case i < n && p[i] == '*' && f[i+1][j]: // p's * matches nothing
		return true
	case j < m && q[j] == '*' && f[i][j+1]: // q's * matches nothing
		return true
	case i == n || j == m:
		return false
	case p[i] == '*': // it takes q's next character, or q's * takes one too
		return f[i][j+1] || q[j] == '*' && f[i+1][j]
	case q[j] == '*': // it takes p's next character
		return f[i+1][j]
	}
	return (p[i] == q[j] || p[i] == '?' || q[j] == '?') && f[i+1][j+1]
}
