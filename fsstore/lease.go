package fsstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"aipm/fsstore/internal/storage"
	"aipm/internal/failpoint"
)

// A Lease is an agent's or a human's claim on paths of the project (DESIGN
// section 18): exclusive (no one else may lease an overlapping path) or
// shared (others may share it, no one may hold it exclusively). It lives
// in .ai-pm/leases/leases.json until it expires, is released or broken,
// or its session ends (unless Keep).
type Lease struct {
	ID        string    `json:"id"`
	Holder    string    `json:"holder"`
	Session   string    `json:"session,omitempty"`
	Keep      bool      `json:"keep,omitempty"` // outlives its session
	Paths     []string  `json:"paths"`
	Exclusive bool      `json:"exclusive"`
	Reason    string    `json:"reason,omitempty"`
	TaskID    string    `json:"taskId,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// leasesDoc is leases.json: the live leases, and the tombstones of the
// breaks whose holders are not told yet (lease_break.go).
type leasesDoc struct {
	Leases []Lease       `json:"leases"`
	Broken []brokenLease `json:"broken,omitempty"`
	// Checked is the digest of Leases as aipm wrote them, when they were
	// known to hold together (lease_checked.go).
	Checked string `json:"checked,omitempty"`
}

// MaxLeaseReason is the longest reason a lease or a break gives, in
// bytes; how long a lease lasts is config.toml's (lease_ttl,
// lease_max_ttl in [defaults]), and the other bounds are lease_bounds.go's.
const MaxLeaseReason = 500

// LeaseRequest is what TakeLease is asked.
type LeaseRequest struct {
	Holder  string
	Session string // the session taking it: the lease ends with it unless Keep
	Keep    bool
	Paths   []string
	Shared  bool
	Reason  string
	TaskID  string
	TTL     time.Duration // 0: the config's lease_ttl
}

// LeaseConflictError is a take or a write refused because of Lease: Path
// (asked) overlaps Against (one of the lease's paths).
type LeaseConflictError struct {
	Lease   Lease  `json:"lease"`
	Path    string `json:"path"`
	Against string `json:"against"`
}

func (e *LeaseConflictError) Error() string {
	how := "shared"
	if e.Lease.Exclusive {
		how = "exclusively"
	}
	reason := ""
	if r := e.Lease.Reason; r != "" {
		if len(r) > MaxLeaseReason { // a hand edit: the sentence stays one
			r = strings.ToValidUTF8(r[:MaxLeaseReason], "") + "…"
		}
		reason = fmt.Sprintf(" (%s)", r)
	}
	return fmt.Sprintf("%s is leased %s by %s as %s until %s%s: ask %s to release it %s, or wait",
		e.Path, how, e.Lease.Holder, e.Against, e.Lease.ExpiresAt.UTC().Format(time.RFC3339), reason, e.Lease.Holder, LeaseAskTools)
}

// LeaseAskTools is how a LeaseConflictError tells a model to ask the
// holder; the CLI says aipm send instead.
const LeaseAskTools = "(send_message; from a task session, delegate_to_chat_session)"

func (e *LeaseConflictError) Unwrap() error { return ErrLeaseConflict }

// leaseLive says whether l still holds at now: not expired, and its
// session (if it ends with one) still live with its aipm serve process
// running (Session.Alive: the one the session names, not another given
// its pid since). A lease ends when its holder's process is gone, for
// every reader at once: a serve killed before it could end its session
// leaves the session document as it was, until a sweep removes it.
func (s *Store) leaseLive(l Lease, now time.Time) bool {
	if !now.Before(l.ExpiresAt) {
		return false
	}
	if l.Session == "" || l.Keep {
		return true
	}
	if storage.CheckID(storage.PrefixSession, l.Session) != nil {
		return false // no session can have that id: a hand edit
	}
	ses, err := s.session(l.Session)
	if err != nil {
		// Gone, it ended; unreadable (damaged, a permission), the lease is
		// kept until its time is up rather than dropped for good.
		return !errors.Is(err, storage.ErrNotFound)
	}
	return ses.Alive(now)
}

// TakeLease takes a lease for req.Holder, or refuses it with a
// *LeaseConflictError naming a live lease of another holder it overlaps;
// nothing is written then. The check and the write hold leases/.lock: of
// two takers racing for one path, exactly one wins. Taking again renews:
// the holder's own leases whose every path the new one names are replaced
// by it. Dead leases are dropped on the way (expiry needs no daemon). A
// take that would grow the holder's leases or all of them past their
// bounds (lease_bounds.go) is refused with one sentence naming the bound.
func (s *Store) TakeLease(ctx context.Context, cfg *storage.Config, req LeaseRequest) (Lease, error) {
	l, err := s.newLease(cfg, req)
	if err != nil {
		return Lease{}, err
	}
	if err := s.ignoreLeases(); err != nil {
		return Lease{}, err
	}
	_, err = s.updateLeases(ctx, l.CreatedAt, func(doc *leasesDoc) error {
		if c := s.leaseConflict(doc.Leases, l); c != nil {
			return c
		}
		use := measureLeases(doc)
		before := use.clone()
		doc.Leases = slices.DeleteFunc(doc.Leases, func(m Lease) bool {
			renewed := m.Holder == l.Holder && !slices.ContainsFunc(m.Paths, func(p string) bool { return !slices.Contains(l.Paths, p) })
			if renewed {
				// A renewal extends: what it does not say (a reason, a task,
				// keep, a later end) it keeps, and a kept lease stays kept.
				l.Reason, l.TaskID = cmp.Or(l.Reason, m.Reason), cmp.Or(l.TaskID, m.TaskID)
				if m.Keep {
					l.Keep = true
				}
				if m.ExpiresAt.After(l.ExpiresAt) {
					l.ExpiresAt = m.ExpiresAt
				}
				use.add(m, -1)
			}
			return renewed
		})
		use.add(l, 1)
		if err := use.exceeds(before, l.Holder); err != nil {
			return err
		}
		doc.Leases = append(doc.Leases, l)
		return nil
	})
	if err != nil {
		return Lease{}, err
	}
	return l, nil
}

// leaseConflict is the refusal of l for the first of leases (live) held
// by another holder that it cannot be held with: one of the two is
// exclusive, and a pattern of each overlaps; nil when none is.
func (s *Store) leaseConflict(leases []Lease, l Lease) *LeaseConflictError {
	m := &leaseMatcher{}
	defer func() { s.leaseSteps.Add(m.steps) }()
	mine := s.compileGlobs(l.Paths)
	for _, o := range leases {
		if o.Holder == l.Holder || !o.Exclusive && !l.Exclusive {
			continue
		}
		if path, against, ok := m.firstOverlap(mine, s.compileGlobs(usablePatterns(o))); ok {
			return &LeaseConflictError{Lease: o, Path: path, Against: against}
		}
	}
	return nil
}

// compileGlobs compiles clean, bounded patterns, each as leases compare
// it (leaseKey: NFC, case folded where the file system folds it), named
// as written.
func (s *Store) compileGlobs(patterns []string) []leaseGlob {
	globs := make([]leaseGlob, len(patterns))
	for i, p := range patterns {
		globs[i] = compileLeaseGlob(s.leaseKey(p))
		globs[i].text = p
	}
	return globs
}

// updateLeases is the one read-change-write of leases.json, under
// leases/.lock: the leases ended by now are dropped, then change changes
// the rest (an error writes nothing). Once the lock is released (telling
// takes the holder's notifications lock: never two locks at once), it
// finishes every break the file records as untold (finishBreaks): the
// ones change made, and any a breaker killed half-way left. Only a
// failure to tell of a break change made is the caller's error; another
// tombstone left untold waits for the next write, and doctor reports it.
// written says whether change's document is on disk: an error with
// written true is a telling that failed, the change made all the same.
func (s *Store) updateLeases(ctx context.Context, now time.Time, change func(doc *leasesDoc) error) (written bool, err error) {
	var before, after []brokenLease
	_, err = storage.UpdateDoc(ctx, s.files, s.files.LeasesPath(), storage.ModeFile, func(doc *leasesDoc, _ bool) error {
		held := doc.checked()
		s.dropDeadLeases(doc, now)
		before = slices.Clone(doc.Broken)
		if err := change(doc); err != nil {
			return err
		}
		s.recordChecked(doc, held)
		after = slices.Clone(doc.Broken)
		return nil
	})
	written = err == nil
	untold := before // on file whatever change did
	if written {
		untold = after
	}
	if len(untold) == 0 {
		return written, err
	}
	failpoint.Kill(failpointBreakUntold)
	told, tellErr := s.finishBreaks(ctx, untold)
	found := brokenIDs(before)
	for _, b := range untold {
		if !found[b.Lease.ID] && !told[b.Lease.ID] {
			return written, errors.Join(err, tellErr)
		}
	}
	return written, err
}

// ignoreLeases keeps leases/ out of git with a .gitignore of its own: a
// project made before leases has no line for it in .ai-pm/.gitignore, and
// a lease file a checkout rewrites would take or end leases behind aipm.
func (s *Store) ignoreLeases() error {
	path := filepath.Join(filepath.Dir(s.files.LeasesPath()), ".gitignore")
	if _, err := os.Lstat(path); err == nil {
		return nil
	}
	if err := s.files.MkdirAll(filepath.Dir(path)); err != nil { // no link followed
		return fmt.Errorf("keep leases out of git: %w", err)
	}
	if err := storage.WriteFileAtomic(path, []byte("# Leases are runtime state: keep them out of git.\n*\n"), storage.ModeFile, s.files.Durable.Load()); err != nil {
		return fmt.Errorf("keep leases out of git: %w", err)
	}
	return nil
}

// newLease checks req and makes its lease.
func (s *Store) newLease(cfg *storage.Config, req LeaseRequest) (Lease, error) {
	if err := storage.CheckAgentID(req.Holder); err != nil {
		return Lease{}, err
	}
	if len(req.Paths) == 0 {
		return Lease{}, storage.Kindf(storage.ErrInvalid, "a lease names at least one path: give the files, directories or globs you will change")
	}
	if len(req.Paths) > maxLeasePaths {
		return Lease{}, storage.Kindf(storage.ErrInvalid, "a lease names at most %d paths, not %d: lease a directory or a glob instead", maxLeasePaths, len(req.Paths))
	}
	if err := checkLeaseReason("a lease's reason", req.Reason); err != nil {
		return Lease{}, err
	}
	ttl, err := leaseTTL(cfg, req.TTL)
	if err != nil {
		return Lease{}, err
	}
	paths, err := s.leasePatterns(req.Paths)
	if err != nil {
		return Lease{}, err
	}
	now := time.Now().UTC()
	return Lease{
		ID: storage.NewID(storage.PrefixLease), Holder: req.Holder, Session: req.Session, Keep: req.Keep,
		Paths: paths, Exclusive: !req.Shared, Reason: req.Reason, TaskID: req.TaskID,
		CreatedAt: now, ExpiresAt: now.Add(ttl),
	}, nil
}

// dropDeadLeases removes from doc the leases no longer live at now, and
// puts a hand-edited path ("src/", "./src") in the one form leases compare.
func (s *Store) dropDeadLeases(doc *leasesDoc, now time.Time) {
	boundLeaseEnds(doc.Leases, now, s.files.LeaseMaxTTL())
	doc.Leases = slices.DeleteFunc(doc.Leases, func(l Lease) bool { return !s.leaseLive(l, now) })
	for _, l := range doc.Leases {
		for i, p := range l.Paths {
			if c, err := cleanLeasePattern(p); err == nil {
				l.Paths[i] = c
			}
		}
	}
}

// leaseTTL is how long a lease asked for ttl lasts (0: the config's
// lease_ttl), or why it cannot.
func leaseTTL(cfg *storage.Config, ttl time.Duration) (time.Duration, error) {
	d := cfg.Defaults
	if ttl == 0 {
		return min(d.LeaseTTL.Duration, d.LeaseMaxTTL.Duration), nil
	}
	if ttl < time.Second || ttl > d.LeaseMaxTTL.Duration {
		return 0, storage.Kindf(storage.ErrInvalid, "a lease lasts 1s to %v (lease_max_ttl), not %v: ask for less and renew it before it ends", d.LeaseMaxTTL.Duration, ttl)
	}
	return ttl, nil
}

// cleanLeasePatterns cleans each of paths (cleanLeasePattern), dropping
// repeats.
func cleanLeasePatterns(paths []string) ([]string, error) {
	var clean []string
	for _, p := range paths {
		c, err := cleanLeasePattern(p)
		if err != nil {
			return nil, storage.Kindf(storage.ErrInvalid, "%s", err)
		}
		if !slices.Contains(clean, c) {
			clean = append(clean, c)
		}
	}
	return clean, nil
}

// endLeases removes from the leases the live ones of holder ("" for any)
// having a path that overlaps one of paths (none: every one of holder's),
// and returns them; it refuses, changing nothing, when none is. A break
// (brk not nil) leaves a tombstone of each, whose holder is told.
func (s *Store) endLeases(ctx context.Context, holder string, paths []string, brk *breaking) ([]Lease, error) {
	clean, err := s.leaseEndPatterns(paths)
	if err != nil {
		return nil, err
	}
	var ended []Lease
	now := time.Now().UTC()
	m := &leaseMatcher{}
	defer func() { s.leaseSteps.Add(m.steps) }()
	named := s.compileGlobs(clean)
	written, err := s.updateLeases(ctx, now, func(doc *leasesDoc) error {
		ended = nil
		doc.Leases = slices.DeleteFunc(doc.Leases, func(l Lease) bool {
			end := holder == "" || l.Holder == holder
			if end && len(clean) > 0 {
				_, _, end = m.firstOverlap(s.compileGlobs(usablePatterns(l)), named)
			}
			if end {
				ended = append(ended, l)
			}
			return end
		})
		if len(ended) == 0 {
			who := "no one holds a live lease"
			if holder != "" {
				who = holder + " holds no live lease"
			}
			if len(clean) == 0 {
				return storage.Kindf(storage.ErrNotFound, "%s: nothing to end (list them with aipm leases)", who)
			}
			return storage.Kindf(storage.ErrNotFound, "%s on %s: list them with aipm leases", who, strings.Join(clean, ", "))
		}
		brk.bury(doc, ended, now)
		return nil
	})
	if !written {
		return nil, err // nothing ended
	}
	return ended, err
}

// ReleaseLeases ends holder's leases on paths (each lease having a path
// that overlaps one of them), or, with none, every lease holder has; it
// returns those it ended, and refuses when there are none.
func (s *Store) ReleaseLeases(ctx context.Context, holder string, paths []string) ([]Lease, error) {
	return s.endLeases(ctx, holder, paths, nil)
}

// Leases returns the live leases, oldest first, each with the paths it
// protects (a hand-edited one that protects nothing is left out: see
// boundLeaseEnds and usablePatterns; aipm doctor reports them). It takes
// no lock.
func (s *Store) Leases() ([]Lease, error) {
	leases, _, err := s.readLeases(false)
	return leases, err
}

// LeasesAndOverlaps is Leases with every pair of them that cannot both
// hold (leaseOverlaps), which only a hand edit of leases.json makes: none
// are looked for when the leases are as aipm wrote them.
func (s *Store) LeasesAndOverlaps() ([]Lease, []LeaseOverlap, error) {
	leases, checked, err := s.readLeases(true)
	if err != nil || checked {
		return leases, nil, err
	}
	overlaps, _ := s.leaseOverlaps(leases)
	return leases, overlaps, nil
}

// readLeases is Leases, and, asked whether, whether they are as aipm
// wrote them, known to hold together (leasesDoc.checked).
func (s *Store) readLeases(whether bool) ([]Lease, bool, error) {
	var doc leasesDoc
	if err := s.files.ReadDoc(s.files.LeasesPath(), &doc); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return nil, false, err
	}
	checked := whether && doc.checked()
	s.dropDeadLeases(&doc, time.Now())
	live := doc.Leases[:0]
	for _, l := range doc.Leases {
		if l.Paths = usablePatterns(l); len(l.Paths) > 0 {
			live = append(live, l)
		}
	}
	return live, checked, nil
}

// LeaseCheck returns, reading the leases once, one conflict for each of
// names (files to be written: absolute, or relative to the project
// directory; no globs) that a live exclusive lease of another holder than
// agent covers, in names' order. Each is taken as the file it is, not its
// spelling (lease_path.go): links followed, hard links, case and Unicode
// forms; a path outside the project is no lease's unless it is a hard link
// of a leased file.
func (s *Store) LeaseCheck(agent string, names []string) ([]*LeaseConflictError, error) {
	leases, err := s.Leases()
	if err != nil {
		return nil, err
	}
	return s.checkLeaseFiles(leases, agent, names), nil
}

// blocking is the first of leases (their patterns compiled in globs, by
// key) that covers name, whose key (leaseKey) is key.
func (m *leaseMatcher) blocking(leases []Lease, globs [][]leaseGlob, name, key string) *LeaseConflictError {
	path := compileLeasePath(key)
	for i, l := range leases {
		for j := range globs[i] {
			if m.covers(&globs[i][j], &path) {
				return &LeaseConflictError{Lease: l, Path: name, Against: globs[i][j].text}
			}
		}
	}
	return nil
}

// A LeaseOverlap is two live leases that cannot both hold (different
// holders, one of them exclusive, a path of each overlapping): the leases
// I and J of those compared (I < J), and the first such paths, PathI of
// I's and PathJ of J's. TakeLease refuses such a pair, so only a hand edit
// of leases.json makes one (the board and aipm status show it).
type LeaseOverlap struct {
	I, J         int
	PathI, PathJ string
}

// leaseOverlaps is every pair of leases that cannot both hold, and
// whether they were compared: leases over the document's bounds, which
// only a hand edit makes (doctor reports it), are not, as their pairs
// could cost without bound.
func (s *Store) leaseOverlaps(leases []Lease) ([]LeaseOverlap, bool) {
	if !leasesWithinBounds(leases) {
		return nil, false
	}
	m := &leaseMatcher{}
	defer func() { s.leaseSteps.Add(m.steps) }()
	globs := make([][]leaseGlob, len(leases))
	for i, l := range leases {
		globs[i] = s.compileGlobs(usablePatterns(l))
	}
	var out []LeaseOverlap
	for i, l := range leases {
		for j := i + 1; j < len(leases); j++ {
			if o := leases[j]; o.Holder == l.Holder || !o.Exclusive && !l.Exclusive {
				continue
			}
			if pi, pj, ok := m.firstOverlap(globs[i], globs[j]); ok {
				out = append(out, LeaseOverlap{I: i, J: j, PathI: pi, PathJ: pj})
			}
		}
	}
	return out, true
}

// firstOverlap is the first pattern of a and of b that overlap.
func (m *leaseMatcher) firstOverlap(a, b []leaseGlob) (pa, pb string, ok bool) {
	for i := range a {
		for j := range b {
			if m.overlap(&a[i], &b[j]) {
				return a[i].text, b[j].text, true
			}
		}
	}
	return "", "", false
}

// LeasedByOthers says whether another holder than agent has a live
// exclusive lease: a write of files not known (a hook input that could
// not be read) may be under it.
func (s *Store) LeasedByOthers(agent string) (bool, error) {
	leases, err := s.Leases()
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(leases, func(l Lease) bool { return l.Exclusive && l.Holder != agent }), nil
}
