package fsstore

import (
	"slices"
	"strings"
)

// How two lease patterns are compared, at a cost linear in their length
// (DESIGN section 18: no holder can make the leases slow for the others).
// A pattern is compiled once per take, check or listing (compileLease),
// each of its names into a leaseName; two names meet (have a name in
// common) by one of three rules, none of which backtracks:
//
//   - neither has a *: the same length in characters, and at each place
//     the same character or a ? on either side;
//   - both have a *: what comes before the first * of each agrees over
//     the shorter of the two, and so does what comes after the last *
//     (the stars of each absorb the rest of the other: the name is the
//     longer start, then every run between stars of both, then the longer
//     end);
//   - one has a *: the other is a fixed run of characters and ?; the
//     start and end of the first must agree with its ends, and each run
//     between its stars is found, leftmost, in what is between, by a
//     shift-and over one 64-bit word (a run is at most 64 bytes: see
//     maxLeaseGlobName), each character of the fixed side looked at once.
//
// A leaseMatcher counts the steps it takes: a character looked at, a name
// compared. Tests bound them (export_test.go); nothing else reads them.

// anyChar is a ? in a compiled name: one character, whichever.
const anyChar rune = -1

// leaseName is one compiled name of a pattern (between two slashes).
type leaseName struct {
	text  string // as written
	plain bool   // no * and no ?: compared as a string
	star  bool   // has a *
	// fixed is the characters of a name without *, anyChar for a ?.
	fixed []rune
	// pre and suf are what comes before a star name's first * and after
	// its last; runs are the non-empty runs between its stars; need is
	// how many characters a name it matches has at least.
	pre, suf []rune
	runs     []leaseRun
	need     int
}

// leaseRun is a run of characters between two stars, ready for the
// shift-and: the bit i of masks[k] is set where the run's character i is
// chars[k] (sorted), the bit i of anyBits where it is a ?.
type leaseRun struct {
	n       int
	chars   []rune
	masks   []uint64
	anyBits uint64
}

// leaseGlob is one compiled pattern.
type leaseGlob struct {
	text  string
	names []leaseName
}

// compileLeaseGlob compiles the clean, bounded pattern p (one that
// cleanLeasePattern took); a name is a pattern without wildcards.
func compileLeaseGlob(p string) leaseGlob {
	g := leaseGlob{text: p}
	for _, seg := range strings.Split(p, "/") {
		g.names = append(g.names, compileLeaseName(seg, true))
	}
	return g
}

// compileLeasePath compiles name, a clean project-relative path with no
// wildcards: a * or ? in it is the character itself. What is below its
// first maxLeaseNames names is left out: no pattern reaches it, and a
// pattern that covers those names covers it.
func compileLeasePath(name string) leaseGlob {
	g := leaseGlob{text: name}
	for i, seg := range strings.Split(name, "/") {
		if i == maxLeaseNames {
			break
		}
		g.names = append(g.names, compileLeaseName(seg, false))
	}
	return g
}

// compileLeaseName compiles one name; globs says whether * and ? in it
// are wildcards.
func compileLeaseName(seg string, globs bool) leaseName {
	n := leaseName{text: seg}
	if !globs || !strings.ContainsAny(seg, "*?") {
		n.plain = true
		n.fixed = []rune(seg)
		return n
	}
	chars := globRunes(seg)
	first, last := slices.Index(chars, '*'), lastIndex(chars, '*')
	if first < 0 {
		n.fixed = chars
		return n
	}
	n.star = true
	n.pre, n.suf = chars[:first], chars[last+1:]
	n.need = len(n.pre) + len(n.suf)
	if first == last {
		return n
	}
	for _, run := range splitRunes(chars[first+1:last], '*') {
		if len(run) > 0 {
			r := newLeaseRun(run)
			n.runs = append(n.runs, r)
			n.need += r.n
		}
	}
	return n
}

// globRunes is seg's characters, each ? as anyChar (a * stays '*').
func globRunes(seg string) []rune {
	chars := []rune(seg)
	for i, c := range chars {
		if c == '?' {
			chars[i] = anyChar
		}
	}
	return chars
}

// splitRunes is chars cut at each sep, as strings.Split would.
func splitRunes(chars []rune, sep rune) [][]rune {
	var parts [][]rune
	for {
		i := slices.Index(chars, sep)
		if i < 0 {
			return append(parts, chars)
		}
		parts = append(parts, chars[:i])
		chars = chars[i+1:]
	}
}

// newLeaseRun makes the shift-and masks of a run of at most 64
// characters (anyChar for a ?).
func newLeaseRun(chars []rune) leaseRun {
	r := leaseRun{n: len(chars)}
	for i, c := range chars {
		if c == anyChar {
			r.anyBits |= 1 << i
			continue
		}
		k, found := slices.BinarySearch(r.chars, c)
		if !found {
			r.chars = slices.Insert(r.chars, k, c)
			r.masks = slices.Insert(r.masks, k, 0)
		}
		r.masks[k] |= 1 << i
	}
	return r
}

func lastIndex(chars []rune, c rune) int {
	for i := len(chars) - 1; i >= 0; i-- {
		if chars[i] == c {
			return i
		}
	}
	return -1
}

// leaseMatcher compares compiled patterns, counting its steps.
type leaseMatcher struct {
	steps int64
	ascii [128]uint64 // find's table
}

// overlap says whether some path is covered by both a and b: name by name
// over the shorter one (what a pattern covers goes on below it).
func (m *leaseMatcher) overlap(a, b *leaseGlob) bool {
	for i := range min(len(a.names), len(b.names)) {
		if !m.meet(&a.names[i], &b.names[i]) {
			return false
		}
	}
	return true
}

// covers says whether pattern p covers the path name (compileLeasePath).
func (m *leaseMatcher) covers(p, name *leaseGlob) bool {
	if len(name.names) < len(p.names) {
		m.steps++
		return false
	}
	return m.overlap(p, name)
}

// meet says whether names a and b match a name in common.
func (m *leaseMatcher) meet(a, b *leaseName) bool {
	m.steps++
	switch {
	case a.plain && b.plain:
		m.steps += int64(min(len(a.text), len(b.text)) / 64) // a string compare: a word at a time
		return a.text == b.text
	case !a.star && !b.star:
		return len(a.fixed) == len(b.fixed) && m.agree(a.fixed, b.fixed)
	case a.star && b.star:
		k, j := min(len(a.pre), len(b.pre)), min(len(a.suf), len(b.suf))
		return m.agree(a.pre[:k], b.pre[:k]) && m.agree(a.suf[len(a.suf)-j:], b.suf[len(b.suf)-j:])
	case a.star:
		return m.starMeetsFixed(a, b.fixed)
	}
	return m.starMeetsFixed(b, a.fixed)
}

// agree says whether a and b, of one length, have at each place the same
// character or a ? on one side.
func (m *leaseMatcher) agree(a, b []rune) bool {
	m.steps += int64(len(a))
	for i, c := range a {
		if c != b[i] && c != anyChar && b[i] != anyChar {
			return false
		}
	}
	return true
}

// starMeetsFixed says whether the star name g matches a name that the
// fixed characters f (anyChar for a ?) match too: f's ends agree with
// g's, and g's runs are found one after the other in between, each at its
// leftmost (the earliest end leaves the most room for the next).
func (m *leaseMatcher) starMeetsFixed(g *leaseName, f []rune) bool {
	n := len(f)
	if n < g.need {
		return false
	}
	if !m.agree(g.pre, f[:len(g.pre)]) || !m.agree(g.suf, f[n-len(g.suf):]) {
		return false
	}
	text := f[len(g.pre) : n-len(g.suf)]
	for i := range g.runs {
		end := m.find(&g.runs[i], text)
		if end < 0 {
			return false
		}
		text = text[end:]
	}
	return true
}

// find is where the leftmost place of run r in text ends (-1: none): a
// shift-and, bit i of d set when the run's first i+1 characters agree
// with the text just read. A long text reads each character's mask from
// a table of the ASCII characters made for this call.
func (m *leaseMatcher) find(r *leaseRun, text []rune) int {
	all := uint64(1)<<r.n - 1
	if r.n == 64 {
		all = ^uint64(0)
	}
	hit := uint64(1) << (r.n - 1)
	m.steps += int64(len(text))
	var ascii *[128]uint64
	if len(text) >= 32 {
		ascii = &m.ascii
		for c := range ascii {
			ascii[c] = r.anyBits
		}
		for k, c := range r.chars {
			if c < 128 {
				ascii[c] |= r.masks[k]
			}
		}
	}
	var d uint64
	for j, c := range text {
		var mask uint64
		switch {
		case c == anyChar:
			mask = all
		case ascii != nil && c >= 0 && c < 128:
			mask = ascii[c]
		default:
			mask = r.mask(c)
		}
		d = (d<<1 | 1) & mask
		if d&hit != 0 {
			m.steps -= int64(len(text) - j - 1)
			return j + 1
		}
	}
	return -1
}

// mask is the bits of the run's places that character c agrees with.
func (r *leaseRun) mask(c rune) uint64 {
	lo, hi := 0, len(r.chars)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		switch {
		case r.chars[mid] == c:
			return r.anyBits | r.masks[mid]
		case r.chars[mid] < c:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return r.anyBits
}
