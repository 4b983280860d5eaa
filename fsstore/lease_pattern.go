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
	if err := checkLeasePatternBounds(p, c); err != nil {
		return "", err
	}
	return c, nil
}
