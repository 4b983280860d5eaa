package fsstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"aipm/fsstore/internal/storage"
	"aipm/internal/failpoint"
)

// A human's break ends a lease at once and tells its holder, even if the
// breaker dies half-way. It is three steps, each safe to repeat:
//
//  1. under leases/.lock, the lease leaves leases.json's live leases and a
//     tombstone (brokenLease) takes its place: who broke it, why, when;
//  2. the lock released, the holder is told in a notification keyed by
//     the lease's id, which is never written twice (Notify);
//  3. the tombstone is dropped.
//
// A process killed after step 1 leaves the tombstone: the next write of
// leases.json (a take, a release, a break; updateLeases) finishes it, and
// doctor reports it and, with --repair, finishes it too. The holder is
// told once: the key keeps a second line out while the first is in its
// notifications, so only a breaker killed between steps 2 and 3 whose
// holder's read notification is compacted away before the next write of
// the leases tells it twice, the same words again.

// A brokenLease is the tombstone of a broken lease whose holder is not
// told yet. It is no lease: no reader takes it as live.
type brokenLease struct {
	Lease    Lease     `json:"lease"`
	By       string    `json:"by"`
	Reason   string    `json:"reason"`
	BrokenAt time.Time `json:"brokenAt"`
}

// brokenKeyPrefix, before a lease's id, is the key of the notification
// telling its holder it was broken: one notification, whoever tells it.
const brokenKeyPrefix = "lease-broken:"

// The failpoints (internal/failpoint) of a break: after the tombstone is
// written, before anyone is told; after the telling, before the tombstone
// is dropped.
const (
	failpointBreakUntold    = "lease-broken-untold"
	failpointBreakUndropped = "lease-broken-undropped"
)

// A breaking is one human's break: who breaks, and the reason its holders
// are told.
type breaking struct {
	by, reason string
}

// bury puts in doc a tombstone for each of ended whose holder is to be
// told: every one but by's own (nil b: a release, which tells no one).
func (b *breaking) bury(doc *leasesDoc, ended []Lease, now time.Time) {
	if b == nil {
		return
	}
	for _, l := range ended {
		if l.Holder != b.by {
			doc.Broken = append(doc.Broken, brokenLease{Lease: l, By: b.by, Reason: b.reason, BrokenAt: now})
		}
	}
}

// BreakLeases ends every live lease, whoever holds it, having a path that
// overlaps one of paths: a human's decision (the caller checks that by is
// one), said with reason to each holder in a notification. A holder it
// could not tell is told by the next write of the leases, or aipm doctor
// --repair: the leases are broken all the same, and returned with the error.
func (s *Store) BreakLeases(ctx context.Context, by string, paths []string, reason string) ([]Lease, error) {
	if len(paths) == 0 {
		return nil, storage.Kindf(storage.ErrInvalid, "name the paths whose leases to break")
	}
	if err := checkBreakReason(reason); err != nil {
		return nil, err
	}
	return s.endLeases(ctx, "", paths, &breaking{by: by, reason: reason})
}

// BreakLease ends the one live lease id, whoever holds it, as BreakLeases
// does: for a page that shows that lease, so that a lease taken since on
// an overlapping path is not ended with it.
func (s *Store) BreakLease(ctx context.Context, by, id, reason string) (Lease, error) {
	if err := checkBreakReason(reason); err != nil {
		return Lease{}, err
	}
	brk := &breaking{by: by, reason: reason}
	var broken Lease
	now := time.Now().UTC()
	written, err := s.updateLeases(ctx, now, func(doc *leasesDoc) error {
		broken = Lease{}
		i := slices.IndexFunc(doc.Leases, func(l Lease) bool { return l.ID == id })
		if i < 0 {
			return storage.Kindf(storage.ErrNotFound, "no live lease %s: it ended or was released already", id)
		}
		broken = doc.Leases[i]
		doc.Leases = slices.Delete(doc.Leases, i, i+1)
		brk.bury(doc, []Lease{broken}, now)
		return nil
	})
	if !written {
		return Lease{}, err // nothing broken
	}
	return broken, err
}

// checkBreakReason refuses a break without a reason its holders can read.
func checkBreakReason(reason string) error {
	if strings.TrimSpace(reason) == "" {
		return storage.Kindf(storage.ErrInvalid, "breaking a lease needs a reason of 1 to %d bytes, which its holder is told: give --reason", MaxLeaseReason)
	}
	return checkLeaseReason("a break's reason", reason)
}

// finishBreaks tells the holder of each of untold that its lease was
// broken, then drops from leases.json the tombstones of those told. It
// returns the ids of the leases whose holders are told, and what kept it
// from telling the others.
func (s *Store) finishBreaks(ctx context.Context, untold []brokenLease) (told map[string]bool, err error) {
	told = map[string]bool{}
	var errs []error
	for _, b := range untold {
		if err := s.tellBroken(ctx, b); err != nil {
			errs = append(errs, err)
			continue
		}
		told[b.Lease.ID] = true
	}
	if len(told) > 0 {
		failpoint.Kill(failpointBreakUndropped)
		if err := s.dropTombstones(ctx, told); err != nil {
			errs = append(errs, err) // told all the same: the next write drops them
		}
	}
	return told, errors.Join(errs...)
}

// tellBroken notifies b's holder that its lease was broken, by whom and
// why; a holder whose id cannot be an agent's (a hand edit) has no one to
// tell.
func (s *Store) tellBroken(ctx context.Context, b brokenLease) error {
	l := b.Lease
	if storage.CheckAgentID(l.Holder) != nil {
		return nil // a hand edit: no notifications can be its
	}
	msg := fmt.Sprintf("%s broke your lease %s on %s: %s. Take it again only after asking %s.", b.By, l.ID, strings.Join(l.Paths, ", "), b.Reason, b.By)
	n := Notification{Message: msg, TaskID: l.TaskID, From: b.By, Key: brokenKeyPrefix + l.ID}
	if _, err := s.Notify(ctx, l.Holder, n); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("tell %s its lease %s was broken (it will be told by the next lease taken or ended, or aipm doctor --repair): %w", l.Holder, l.ID, err)
	}
	return nil
}

// dropTombstones removes from leases.json the tombstones of the leases
// told (another process that finished them first may have done it).
func (s *Store) dropTombstones(ctx context.Context, told map[string]bool) error {
	_, err := storage.UpdateDoc(ctx, s.files, s.files.LeasesPath(), storage.ModeFile, func(doc *leasesDoc, _ bool) error {
		n := len(doc.Broken)
		doc.Broken = slices.DeleteFunc(doc.Broken, func(b brokenLease) bool { return told[b.Lease.ID] })
		if len(doc.Broken) == n {
			return storage.ErrNoChange
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("drop the tombstones of the broken leases told: %w", err)
	}
	return nil
}

// brokenIDs is the set of the ids of the leases broken.
func brokenIDs(broken []brokenLease) map[string]bool {
	ids := make(map[string]bool, len(broken))
	for _, b := range broken {
		ids[b.Lease.ID] = true
	}
	return ids
}

// untoldBreakProblems is doctor's report of the breaks whose holders were
// not told (a breaker killed half-way, or a notification that failed);
// with repair, it tells them (finishBreaks).
func (s *Store) untoldBreakProblems(ctx context.Context, repair bool) ([]storage.Problem, error) {
	var doc leasesDoc
	if err := s.files.ReadDoc(s.files.LeasesPath(), &doc); err != nil || len(doc.Broken) == 0 {
		return nil, nil // none, or none readable: checkJSONDoc reports a damaged file
	}
	var told map[string]bool
	var err error
	if repair {
		told, err = s.finishBreaks(ctx, doc.Broken)
	}
	rel := s.files.Rel(s.files.LeasesPath())
	problems := make([]storage.Problem, 0, len(doc.Broken))
	for _, b := range doc.Broken {
		problems = append(problems, storage.Problem{Path: rel, Repaired: told[b.Lease.ID], Repairable: true, Reason: fmt.Sprintf(
			"%s broke %s's lease %s at %s, and the break is not finished (it stopped half-way, or telling %s failed): %s may not be told yet; aipm doctor --repair finishes it",
			b.By, b.Lease.Holder, b.Lease.ID, b.BrokenAt.UTC().Format(time.RFC3339), b.Lease.Holder, b.Lease.Holder)})
	}
	return problems, err
}
