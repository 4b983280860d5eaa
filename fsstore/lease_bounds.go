package fsstore

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"aipm/fsstore/internal/storage"
)

// The bounds of the leases (DESIGN section 18: no holder can make them
// unreadable or slow for the others), checked before anything is written.
// docs/concepts.md lists them.
//
// A pattern is at most maxLeasePattern bytes of UTF-8 without control
// characters, in at most maxLeaseNames names of at most maxLeaseSegment
// bytes, a name with a * at most maxLeaseGlobName: comparing two patterns
// then takes steps linear in their length (lease_match.go), at most about
// maxLeasePattern.
//
// The document: a lease names at most maxLeasePaths paths; a holder at
// most maxHolderPaths paths of at most maxHolderText bytes in all its
// leases (and the tombstones of its broken ones not told yet), so that no
// one holder fills it; all holders together at most maxLeasesPaths paths
// of maxLeasesText bytes. A take compares its patterns with the others'
// (at most maxLeasesPaths × maxHolderText + maxLeasePaths × maxLeasesText
// characters looked at, a few million steps: milliseconds), a hook check
// a file with each, aipm status each pair (once per hand edit: see
// leasesDoc.Checked). With a reason of at most MaxLeaseReason bytes
// (checkLeaseReason), leases.json stays below 2 MiB with every lease in
// it broken and its tombstone untold, half what every reader reads
// (TestLeaseDocumentBound).
const (
	maxLeasePattern  = 256
	maxLeaseNames    = 32
	maxLeaseSegment  = 255
	maxLeaseGlobName = 64

	maxLeasePaths  = 64
	maxHolderPaths = 64
	maxHolderText  = 4 << 10
	maxLeasesPaths = 512
	maxLeasesText  = 32 << 10

	// maxCheckedPath is the longest path a check looks at: PATH_MAX, the
	// longest any system opens.
	maxCheckedPath = 4096
)

// checkLeaseReason refuses a reason of a lease or a break that is longer
// than MaxLeaseReason bytes, not UTF-8, or has control characters other
// than a newline or a tab. what names it ("a lease's reason").
func checkLeaseReason(what, reason string) error {
	switch {
	case len(reason) > MaxLeaseReason:
		return storage.Kindf(storage.ErrInvalid, "%s is at most %d bytes, not %d: say it shorter", what, MaxLeaseReason, len(reason))
	case !utf8.ValidString(reason):
		return storage.Kindf(storage.ErrInvalid, "%s is not UTF-8 text: say it in text", what)
	case strings.ContainsFunc(reason, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }):
		return storage.Kindf(storage.ErrInvalid, "%s has a control character: say it in plain text", what)
	}
	return nil
}

// checkLeasePatternBounds refuses, with a sentence saying what to give
// instead, the clean pattern c (of p as given) that aipm would not compare
// at a bounded cost, or that no file of the project can be named by: text
// that is not UTF-8, a control character, too many names, a glob name too
// long.
func checkLeasePatternBounds(p, c string) error {
	if !utf8.ValidString(c) {
		return fmt.Errorf("%q is not UTF-8 text: name the file as the project spells it", p)
	}
	if i := strings.IndexFunc(c, func(r rune) bool { return unicode.IsControl(r) || r == utf8.RuneError }); i >= 0 {
		return fmt.Errorf("%q has a control character or U+FFFD: name the files another way (a glob with ? stands for any one character)", p)
	}
	names := strings.Split(c, "/")
	if len(names) > maxLeaseNames {
		return fmt.Errorf("%q is %d directories deep, more than the %d a lease names: lease a directory above it", p, len(names), maxLeaseNames)
	}
	for _, name := range names {
		if strings.Contains(name, "*") && len(name) > maxLeaseGlobName {
			return fmt.Errorf("%q has a glob name of %d bytes, more than the %d a name with * may have: shorten the glob, or lease the directory it is in", p, len(name), maxLeaseGlobName)
		}
	}
	return nil
}

// leaseUse is how much of the document's bounds its entries use: paths
// and their bytes, in all and by holder.
type leaseUse struct {
	paths, text int
	by          map[string][2]int // holder: paths, text
}

// measureLeases is what doc's leases and tombstones use.
func measureLeases(doc *leasesDoc) *leaseUse {
	u := &leaseUse{by: map[string][2]int{}}
	for _, l := range doc.Leases {
		u.add(l, 1)
	}
	for _, b := range doc.Broken {
		u.add(b.Lease, 1)
	}
	return u
}

// clone is a copy of u.
func (u *leaseUse) clone() *leaseUse {
	c := *u
	c.by = maps.Clone(u.by)
	return &c
}

// add counts l's paths (sign -1: l is gone).
func (u *leaseUse) add(l Lease, sign int) {
	text := 0
	for _, p := range l.Paths {
		text += len(p)
	}
	u.paths += sign * len(l.Paths)
	u.text += sign * text
	h := u.by[l.Holder]
	u.by[l.Holder] = [2]int{h[0] + sign*len(l.Paths), h[1] + sign*text}
}

// exceeds is the refusal of a take that makes holder use u where it used
// before: one sentence, the bound passed and what to release, or nil. A
// take that grows nothing past a bound is never refused (a renewal in a
// document over its bounds, which only hand edits make).
func (u *leaseUse) exceeds(before *leaseUse, holder string) error {
	h, was := u.by[holder], before.by[holder]
	switch {
	case h[0] > maxHolderPaths && h[0] > was[0]:
		return storage.Kindf(storage.ErrInvalid, "%s would hold leases on %d paths, more than the %d one holder may: release the leases you are done with, or lease a directory or a glob that covers several paths", holder, h[0], maxHolderPaths)
	case h[1] > maxHolderText && h[1] > was[1]:
		return storage.Kindf(storage.ErrInvalid, "%s's leased paths would be %d bytes long in all, more than the %d one holder may: release the leases you are done with, or lease a directory or a glob that covers several paths", holder, h[1], maxHolderText)
	case u.paths > maxLeasesPaths && u.paths > before.paths:
		return storage.Kindf(storage.ErrInvalid, "the project's leases would name %d paths, more than the %d leases.json holds: ask their holders to release what they are done with (aipm leases lists them), or a human breaks them", u.paths, maxLeasesPaths)
	case u.text > maxLeasesText && u.text > before.text:
		return storage.Kindf(storage.ErrInvalid, "the project's leased paths would be %d bytes long in all, more than the %d leases.json holds: ask their holders to release what they are done with (aipm leases lists them), or a human breaks them", u.text, maxLeasesText)
	}
	return nil
}

// leasesWithinBounds says whether leases are within the document's
// bounds, as a take keeps them.
func leasesWithinBounds(leases []Lease) bool {
	u := measureLeases(&leasesDoc{Leases: leases})
	return u.paths <= maxLeasesPaths && u.text <= maxLeasesText
}

// leaseClockSlack is how far in the future a lease's createdAt may be
// (another process's clock read a moment later) before the lease counts
// as made up.
const leaseClockSlack = time.Minute

// The rule for a lease as stored, which a hand edit may have made: a
// pattern that a take would refuse (cleanLeasePattern: "", ".", an
// absolute path, one leaving the project, one over the bounds...)
// protects nothing, and a lease with no other protects nothing at all;
// a lease ends at its expiresAt or lease_max_ttl after its createdAt,
// whichever is sooner, and one created in the future has ended. Readers
// pass over what protects nothing; writers leave it as it is, and aipm
// doctor reports each (storedLeaseProblems).

// leaseEnd is when l ends, by that rule.
func leaseEnd(l Lease, maxTTL time.Duration) time.Time {
	if bound := l.CreatedAt.Add(maxTTL); bound.Before(l.ExpiresAt) {
		return bound
	}
	return l.ExpiresAt
}

// boundLeaseEnds makes each of leases end when the rule says: at the
// earlier of its expiresAt and lease_max_ttl after its createdAt, or now
// when it was created in the future.
func boundLeaseEnds(leases []Lease, now time.Time, maxTTL time.Duration) {
	for i := range leases {
		l := &leases[i]
		if l.CreatedAt.After(now.Add(leaseClockSlack)) {
			l.ExpiresAt = now
			continue
		}
		l.ExpiresAt = leaseEnd(*l, maxTTL)
	}
}

// usablePatterns is the patterns of l that protect something, in the
// one form leases compare.
func usablePatterns(l Lease) []string {
	var use []string
	for _, p := range l.Paths {
		if c, err := cleanLeasePattern(p); err == nil {
			use = append(use, c)
		}
	}
	return use
}

// storedLeaseProblems is what is wrong with the stored lease l, each a
// sentence saying what the readers make of it and how to fix it.
func storedLeaseProblems(l Lease, now time.Time, maxTTL time.Duration) []string {
	var out []string
	name := fmt.Sprintf("lease %s of %s", storage.Clip(l.ID, storage.MaxEchoedID), storage.Clip(l.Holder, storage.MaxEchoedID))
	if err := storage.CheckAgentID(l.Holder); err != nil {
		out = append(out, fmt.Sprintf("%s: its holder is not an agent id, so only a human's break ends it: give the holder's id, or break it with aipm leases break", name))
	}
	usable := len(usablePatterns(l))
	if len(l.Paths) == 0 {
		out = append(out, fmt.Sprintf("%s names no path, so it protects nothing: give it one, or end it with aipm leases break", name))
	}
	for _, p := range l.Paths {
		if _, err := cleanLeasePattern(p); err != nil {
			alone := ""
			if usable == 0 {
				alone = ", nor does the lease, which has no other"
			}
			out = append(out, fmt.Sprintf("%s: path %q protects nothing (%v)%s: fix it, or end the lease with aipm leases break", name, storage.Clip(p, maxLeasePattern), err, alone))
		}
	}
	switch {
	case l.CreatedAt.IsZero():
		out = append(out, fmt.Sprintf("%s has no createdAt, so it counts as ended (a lease lasts at most lease_max_ttl from it): give it one, or take it again with aipm leases take", name))
	case l.CreatedAt.After(now.Add(leaseClockSlack)):
		out = append(out, fmt.Sprintf("%s was created at %s, in the future, so it counts as ended: take it again with aipm leases take", name, l.CreatedAt.UTC().Format(time.RFC3339)))
	case l.ExpiresAt.After(l.CreatedAt.Add(maxTTL)):
		out = append(out, fmt.Sprintf("%s expires at %s, more than lease_max_ttl (%v) after its createdAt, so it counts as ending at %s: give it an expiresAt within lease_max_ttl, or raise lease_max_ttl in config.toml", name,
			l.ExpiresAt.UTC().Format(time.RFC3339), maxTTL, leaseEnd(l, maxTTL).UTC().Format(time.RFC3339)))
	}
	return out
}

// leasesDocProblems is doctor's report of leases.json, read as data: each
// stored lease that protects less than it says (storedLeaseProblems), and
// a document over the bounds a take keeps (a hand edit), each with how to
// fix it. A lease's problems are on the line of its id.
func (s *Store) leasesDocProblems(rel string, data []byte) []storage.Problem {
	var doc leasesDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return []storage.Problem{{Path: rel, Reason: "leases.json is not {\"leases\": [...]}: " + err.Error() + "; fix it by hand, or remove it to end every lease"}}
	}
	var problems []storage.Problem
	now, maxTTL := time.Now(), s.files.LeaseMaxTTL()
	for _, l := range doc.Leases {
		for _, why := range storedLeaseProblems(l, now, maxTTL) {
			problems = append(problems, storage.Problem{Path: rel, Line: jsonKeyLine(data, l.ID), Reason: why})
		}
	}
	if u := measureLeases(&doc); u.paths > maxLeasesPaths || u.text > maxLeasesText {
		problems = append(problems, storage.Problem{Path: rel, Reason: fmt.Sprintf(
			"the leases name %d paths of %d bytes in all, more than the %d paths of %d bytes aipm writes (an edit by hand): a take that adds a path is refused until some are released or broken (aipm leases break)",
			u.paths, u.text, maxLeasesPaths, maxLeasesText)})
	}
	return problems
}
