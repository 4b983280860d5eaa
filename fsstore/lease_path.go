package fsstore

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"aipm/fsstore/internal/storage"
)

// A lease binds the file, not its spelling (DESIGN section 18). The one
// rule, used by every take, release, break and check:
//
//   - A pattern's literal prefix (its segments before the first glob) is
//     resolved through symbolic links when the lease is taken, released or
//     broken, and the lease stores where it leads, project-relative; a
//     prefix that leads outside the project is refused (leasePatterns).
//   - A path checked against the leases (the hook's written file, the git
//     guard's changed path) is resolved the same way, every link of it
//     followed as a write through it would follow it, a link that points
//     at nothing included (resolveLinks); it is checked as it resolves and
//     as it was spelled, and a path outside the project is no lease's.
//   - A file with more than one hard link is the leased file it is linked
//     to: the leases' files are compared with it by device and inode
//     (linkedLease), within a bound for directories and globs.
//   - Names are compared in Unicode NFC, and with their case folded where
//     the project's file system takes names differing in case for one
//     (caseInsensitive, probed once per store): leaseKey.

// leaseFS is what the leases need to know of the project's file system,
// found once per store.
type leaseFS struct {
	once sync.Once
	root string // the project directory with its links resolved
	fold bool   // the file system names one file by names differing only in case
}

// leaseFS returns the store's leaseFS, probing the file system the first
// time.
func (s *Store) leaseFS() *leaseFS {
	lfs := &s.caches.leaseFS
	lfs.once.Do(func() {
		lfs.root = resolveLinks(s.ProjectDir())
		lfs.fold = caseInsensitive(s.Root())
	})
	return lfs
}

// leaseKey is p as leases compare it (leaseKey).
func (s *Store) leaseKey(p string) string { return leaseKey(p, s.leaseFS().fold) }

// leaseKey is a path or pattern p as leases compare it: in NFC, and with
// each letter's case folded when fold is set (simple Unicode folding, what
// case-insensitive file systems do: "SRC/Main.go" is "src/main.go", "ß"
// stays "ß"). Globs (* and ?) are not letters, so a folded pattern matches
// the folded names its unfolded one matches whatever their case.
func leaseKey(p string, fold bool) string {
	p = norm.NFC.String(p)
	if fold {
		p = strings.Map(foldRune, p)
	}
	return p
}

// foldRune is r's case-folding class, named by its smallest member.
func foldRune(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}

// caseInsensitive probes whether the file system of path (an existing
// entry with a letter in its name: the project's .ai-pm) names it by its
// case-swapped spelling too. Some (FUSE's exFAT) give the two spellings
// different inodes, so when both stat and are not one file, the directory
// is read: a case-sensitive one lists the other spelling as an entry of
// its own.
func caseInsensitive(path string) bool {
	dir, name := filepath.Split(path)
	swapped := strings.Map(swapCase, name)
	if swapped == name {
		return false
	}
	a, err := os.Lstat(path)
	if err != nil {
		return false
	}
	b, err := os.Lstat(filepath.Join(dir, swapped))
	switch {
	case err != nil:
		return false
	case os.SameFile(a, b):
		return true
	}
	return !listsName(dir, swapped)
}

// maxProbeNames bounds the names caseInsensitive reads of a directory.
const maxProbeNames = 100_000

// listsName says whether dir has an entry spelled exactly name, among its
// first maxProbeNames.
func listsName(dir, name string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	for read := 0; read < maxProbeNames; {
		names, err := f.Readdirnames(1024)
		if slices.Contains(names, name) {
			return true
		}
		if err != nil {
			return false
		}
		read += len(names)
	}
	return false
}

// swapCase is r in the other case, if it has one.
func swapCase(r rune) rune {
	if unicode.IsUpper(r) {
		return unicode.ToLower(r)
	}
	return unicode.ToUpper(r)
}

// maxLinkHops bounds the symbolic links one path is followed through, as
// Linux bounds them (ELOOP after 40).
const maxLinkHops = 40

// resolveLinks returns the absolute path p (a relative one is taken from
// the working directory) with every symbolic link in it followed,
// component by component, as a write through p would follow them: a
// ".." is the parent of the directory resolved so far, never taken
// lexically (p is not cleaned first: "link/../x" is x beside the link's
// target), a link's target takes its place (a relative one read from the
// link's directory), a link that points at nothing is followed to
// where a write through it would create the file, and from the first
// component that does not exist the rest is taken as written. Past
// maxLinkHops links the rest is taken as written too.
func resolveLinks(p string) string {
	if !filepath.IsAbs(p) {
		if wd, err := os.Getwd(); err == nil {
			p = wd + string(filepath.Separator) + p
		}
	}
	vol := filepath.VolumeName(p)
	done := vol + string(filepath.Separator)
	todo := splitPath(p[len(vol):])
	missing := false
	for hops := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case ".":
			continue
		case "..":
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, c)
		if missing || hops >= maxLinkHops {
			done = next
			continue
		}
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			missing = err != nil
			done = next
			continue
		}
		target, err := os.Readlink(next)
		if err != nil {
			done = next
			continue
		}
		hops++
		if filepath.IsAbs(target) {
			vol = filepath.VolumeName(target)
			done = vol + string(filepath.Separator)
			target = target[len(vol):]
		}
		todo = append(splitPath(target), todo...)
	}
	return done
}

// splitPath is p's non-empty components.
func splitPath(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return os.IsPathSeparator(uint8(r)) && r < 0x80 })
}

// relUnder returns p relative to root, slash-separated ("." for root
// itself), when p is root or below it: both absolute and clean, their
// components compared as leases compare names (leaseKey).
func relUnder(root, p string, fold bool) (string, bool) {
	if filepath.VolumeName(root) != filepath.VolumeName(p) && !strings.EqualFold(filepath.VolumeName(root), filepath.VolumeName(p)) {
		return "", false
	}
	rc, pc := splitPath(root[len(filepath.VolumeName(root)):]), splitPath(p[len(filepath.VolumeName(p)):])
	if len(pc) < len(rc) {
		return "", false
	}
	for i, c := range rc {
		if c != pc[i] && leaseKey(c, fold) != leaseKey(pc[i], fold) {
			return "", false
		}
	}
	if len(pc) == len(rc) {
		return ".", true
	}
	return strings.Join(pc[len(rc):], "/"), true
}

// leasePatterns is what a take of paths leases: each pattern checked as
// cleanLeasePattern checks it, then its literal prefix resolved through
// symbolic links (resolveLeasePattern), dropping repeats.
func (s *Store) leasePatterns(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		if _, err := cleanLeasePattern(p); err != nil {
			return nil, storage.Kindf(storage.ErrInvalid, "%s", err)
		}
		r, err := s.resolveLeasePattern(p)
		if err != nil {
			return nil, storage.Kindf(storage.ErrInvalid, "%s", err)
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out, nil
}

// leaseEndPatterns is what a release or a break of paths looks for: each
// cleaned as written, and also as it resolves when that differs and stays
// in the project (a lease written by hand may name a path through a link).
func (s *Store) leaseEndPatterns(paths []string) ([]string, error) {
	out, err := cleanLeasePatterns(paths)
	if err != nil {
		return nil, err
	}
	for _, p := range paths {
		if r, err := s.resolveLeasePattern(p); err == nil && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out, nil
}

// resolveLeasePattern is the pattern p, as given (a ".." in it is
// resolved, not cleaned away: "link/../x" is x beside the link's target),
// with its literal prefix (the segments before the first glob) resolved
// through symbolic links (resolveLinks), project-relative, the glob
// segments as written, then cleaned (cleanLeasePattern) in NFC. It
// refuses, with one sentence, a prefix that leads outside the project, or
// one that leads to what no lease may name (the project itself, .ai-pm).
func (s *Store) resolveLeasePattern(p string) (string, error) {
	segs := strings.Split(p, "/")
	n := slices.IndexFunc(segs, isLeaseGlob)
	if n < 0 {
		n = len(segs)
	}
	r := p
	if n > 0 {
		lfs := s.leaseFS()
		at := resolveLinks(lfs.root + string(filepath.Separator) + filepath.FromSlash(strings.Join(segs[:n], "/")))
		rel, ok := relUnder(lfs.root, at, lfs.fold)
		if !ok {
			return "", fmt.Errorf("%q leads through a symbolic link to %s, outside the project: lease a path inside it", p, at)
		}
		r = strings.Join(append([]string{rel}, segs[n:]...), "/")
	}
	clean, err := cleanLeasePattern(norm.NFC.String(r))
	if err != nil {
		return "", fmt.Errorf("%q is %s through a symbolic link: %w", p, r, err)
	}
	return clean, nil
}

// isLeaseGlob says whether a pattern's segment is a glob.
func isLeaseGlob(seg string) bool { return strings.ContainsAny(seg, "*?") }

// leaseFile is a path checked against the leases: the spellings it is
// checked under, and the file it is when it has other hard links.
type leaseFile struct {
	names  []string    // project-relative: as it resolves, then as it was spelled (none: outside the project)
	shown  string      // how a conflict names it: the first of names, else where it resolves
	linked os.FileInfo // the file, when it is a regular file of more than one link
}

// leaseFile makes name (absolute, or relative to the project directory;
// a ".." in it is resolved, not cleaned away) the leaseFile it is
// (lease_path.go's rule).
func (s *Store) leaseFile(name string) leaseFile {
	lfs := s.leaseFS()
	abs := name
	if !filepath.IsAbs(abs) {
		abs = s.ProjectDir() + string(filepath.Separator) + filepath.FromSlash(name)
	}
	resolved := resolveLinks(abs)
	abs = filepath.Clean(abs) // as spelled
	var f leaseFile
	for _, c := range [][2]string{{lfs.root, resolved}, {lfs.root, abs}, {s.ProjectDir(), abs}} {
		if rel, ok := relUnder(c[0], c[1], lfs.fold); ok && rel != "." && !slices.Contains(f.names, rel) {
			f.names = append(f.names, rel)
		}
	}
	f.shown = resolved
	if len(f.names) > 0 {
		f.shown = f.names[0]
	}
	// A hard link outside the project is the leased file all the same.
	if fi, err := os.Stat(resolved); err == nil && fi.Mode().IsRegular() && linkCount(fi) > 1 {
		f.linked = fi
	}
	return f
}

// linkCount is how many hard links the file fi describes has (1 when the
// system does not say).
func linkCount(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// maxLinkSearch bounds the directory entries one LeaseCheck looks through
// for the other names of hard-linked files (linkedLease).
const maxLinkSearch = 10_000

// checkLeaseFiles is LeaseCheck's comparison of names with leases: for
// each name, the first lease that keeps agent from writing it under one of
// its spellings, or, for a file of several hard links, under a name the
// lease covers.
func (s *Store) checkLeaseFiles(leases []Lease, agent string, names []string) []*LeaseConflictError {
	m := &leaseMatcher{}
	defer func() { s.leaseSteps.Add(m.steps) }()
	var others []Lease
	var globs [][]leaseGlob
	for _, l := range leases {
		if l.Holder != agent && l.Exclusive {
			others, globs = append(others, l), append(globs, s.compileGlobs(l.Paths))
		}
	}
	budget := maxLinkSearch
	var blocked []*LeaseConflictError
	for _, name := range names {
		if len(name) > maxCheckedPath+len(s.ProjectDir())+1 {
			continue // no file has such a name
		}
		f := s.leaseFile(name)
		var c *LeaseConflictError
		for _, n := range f.names {
			if c = m.blocking(others, globs, n, s.leaseKey(n)); c != nil {
				break
			}
		}
		if c == nil && f.linked != nil {
			c = s.linkedLease(others, agent, f, &budget)
		}
		if c != nil {
			blocked = append(blocked, c)
		}
	}
	return blocked
}

// linkedLease is the first live exclusive lease of another holder than
// agent that covers a name of f's file (a hard link) other than f's own:
// a lease's literal path is looked at directly (one stat), what a
// directory or a glob covers is looked through, depth first, at most
// *budget entries in all, taken from it; past that, no other name is found.
// Symbolic links met on the way are not followed (a file reached through
// one is checked under its own name).
func (s *Store) linkedLease(leases []Lease, agent string, f leaseFile, budget *int) *LeaseConflictError {
	lfs := s.leaseFS()
	for _, l := range leases {
		if l.Holder == agent || !l.Exclusive {
			continue
		}
		for _, p := range l.Paths {
			if lfs.search(lfs.root, strings.Split(p, "/"), f.linked, budget) {
				return &LeaseConflictError{Lease: l, Path: f.shown, Against: p}
			}
		}
	}
	return nil
}

// search says whether dir (a directory of the project) holds, under the
// pattern segments segs (none left: anything below dir), a regular file
// that is want; each entry looked at costs one of *budget.
func (lfs *leaseFS) search(dir string, segs []string, want os.FileInfo, budget *int) bool {
	if len(segs) > 0 && !isLeaseGlob(segs[0]) {
		if *budget <= 0 || segs[0] == "" || segs[0] == "." || segs[0] == ".." { // a hand edit's: never outside the project
			return false
		}
		*budget--
		p := filepath.Join(dir, segs[0])
		fi, err := os.Lstat(p)
		return err == nil && lfs.searchAt(p, fi, segs[1:], want, budget)
	}
	d, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer d.Close()
	for *budget > 0 {
		entries, err := d.ReadDir(min(*budget, 256))
		for _, e := range entries {
			*budget--
			if dir == lfs.root && e.Name() == storage.DirName {
				continue
			}
			if len(segs) > 0 {
				if ok, _ := path.Match(leaseKey(segs[0], lfs.fold), leaseKey(e.Name(), lfs.fold)); !ok {
					continue
				}
			}
			fi, ferr := e.Info()
			if ferr == nil && lfs.searchAt(filepath.Join(dir, e.Name()), fi, tail(segs), want, budget) {
				return true
			}
		}
		if err != nil { // io.EOF: all of dir looked through
			return false
		}
	}
	return false
}

// searchAt is search's look at the entry p (fi, from Lstat) that matched
// a segment, segs being those left.
func (lfs *leaseFS) searchAt(p string, fi os.FileInfo, segs []string, want os.FileInfo, budget *int) bool {
	switch {
	case fi.Mode().IsRegular():
		return len(segs) == 0 && os.SameFile(fi, want)
	case fi.IsDir():
		return lfs.search(p, segs, want, budget)
	}
	return false
}

// tail is segs without the first, if any.
func tail(segs []string) []string {
	if len(segs) == 0 {
		return nil
	}
	return segs[1:]
}
