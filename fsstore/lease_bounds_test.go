package fsstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"aipm/fsstore/internal/storage"
	"aipm/internal/lockedfile"
)

// pathsOf is n distinct paths of size bytes each, under dir.
func pathsOf(dir string, n, size int) []string {
	paths := make([]string, n)
	for i := range paths {
		head := fmt.Sprintf("%s/%03d-", dir, i)
		paths[i] = head + strings.Repeat("x", size-len(head))
	}
	return paths
}

// Issue 46, item 1: one holder's takes cannot grow leases.json past what
// one holder may hold, however many it makes (long paths, long reasons):
// the take past its budget is refused with one sentence naming the bound
// and what to release, and changes nothing; the others' takes, the
// checks, a release and a break all still work.
func TestLeaseHolderBudget(t *testing.T) {
	ctx := context.Background()
	s, cfg := leadAndCoder(t)
	reason := strings.Repeat("r", 400)
	taken := 0
	for call := range 82 {
		_, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: "coder", Paths: pathsOf(fmt.Sprintf("d%02d", call), maxLeasePaths, 60), Reason: reason})
		if err == nil {
			taken++
			continue
		}
		if !errors.Is(err, storage.ErrInvalid) || !strings.Contains(err.Error(), "one holder may: release") {
			t.Fatalf("take %d past the budget: %v; want a refusal naming the bound and what to release", call, err)
		}
	}
	if taken != 1 {
		t.Fatalf("%d of 82 takes of %d paths each taken; want 1 (the holder's budget is %d paths)", taken, maxLeasePaths, maxHolderPaths)
	}
	if fi, err := os.Stat(s.files.LeasesPath()); err != nil || fi.Size() > 64<<10 {
		t.Fatalf("leases.json after 82 takes: %v, %v; want one lease's worth", fi.Size(), err)
	}
	if _, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: "lead", Paths: []string{"src"}}); err != nil {
		t.Fatalf("another holder's take: %v", err)
	}
	if blocked, err := s.LeaseCheck("lead", []string{pathsOf("d00", 2, 60)[1], "src/a.go"}); err != nil || len(blocked) != 1 {
		t.Fatalf("a check: %v, %v; want d00/001-x... blocked", blocked, err)
	}
	if _, err := s.BreakLeases(ctx, "lead", []string{"d00"}, "taking over"); err != nil {
		t.Fatalf("a break: %v", err)
	}
	if _, err := s.ReleaseLeases(ctx, "lead", nil); err != nil {
		t.Fatalf("a release: %v", err)
	}
}

// With every holder at its budget the document is at its bounds: a take
// that adds a path is refused, naming the bound and what to do, and
// changes nothing; a renewal, a break and a release still work, and a
// take once some were ended.
func TestLeasesAtTheirBounds(t *testing.T) {
	ctx := context.Background()
	s, cfg := leadAndCoder(t)
	for h := range maxLeasesPaths / maxHolderPaths {
		holder := fmt.Sprintf("h%d", h)
		if _, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: holder, Paths: pathsOf(holder, maxHolderPaths, maxHolderText/maxHolderPaths)}); err != nil {
			t.Fatalf("%s's take within its budget: %v", holder, err)
		}
	}
	before := readFile(t, s.files.LeasesPath())
	_, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: "lead", Paths: []string{"src"}})
	if !errors.Is(err, storage.ErrInvalid) || !strings.Contains(err.Error(), "more than the 512 leases.json holds") || !strings.Contains(err.Error(), "release") {
		t.Fatalf("a take past the document's bounds: %v; want a refusal naming the bound and what to release", err)
	}
	if readFile(t, s.files.LeasesPath()) != before {
		t.Fatal("a refused take changed leases.json")
	}
	if _, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: "h0", Paths: pathsOf("h0", maxHolderPaths, maxHolderText/maxHolderPaths), TTL: 2 * time.Hour}); err != nil {
		t.Fatalf("a renewal at the bounds: %v", err)
	}
	if _, err := s.BreakLeases(ctx, "lead", []string{"h1"}, "taking over"); err != nil {
		t.Fatalf("a break at the bounds: %v", err)
	}
	if _, err := s.ReleaseLeases(ctx, "h2", nil); err != nil {
		t.Fatalf("a release at the bounds: %v", err)
	}
	if _, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: "lead", Paths: []string{"src"}}); err != nil {
		t.Fatalf("a take once some were ended: %v", err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// The largest leases.json aipm can write: every lease of one path (the
// most entries), every holder at its bounds, every field at its longest,
// each character of the paths and reasons one JSON escapes; then every
// lease broken, its tombstone left untold, with the longest reason. It
// stays below 2 MiB, half of what every reader reads.
func TestLeaseDocumentBound(t *testing.T) {
	s, cfg := leadAndCoder(t)
	doc := &leasesDoc{}
	long := func(c string, n int) string { return strings.Repeat(c, n) }
	reason := long(`"`, MaxLeaseReason)
	for h := range maxLeasesPaths / maxHolderPaths {
		holder := fmt.Sprintf("h%d", h) + long("x", 62)
		for i := range maxHolderPaths {
			head := fmt.Sprintf("%03d", i)
			l, err := s.newLease(cfg, LeaseRequest{Holder: holder, Session: "ses_01M7YZWACRA0328GMTHNDHB18Z", Keep: true, TaskID: "tsk_01M7YZWACRA0328GMTHNDHB18Z",
				Paths: []string{head + long(`"`, maxHolderText/maxHolderPaths-len(head))}, Reason: reason})
			if err != nil {
				t.Fatal(err)
			}
			use := measureLeases(doc)
			before := use.clone()
			use.add(l, 1)
			if err := use.exceeds(before, holder); err != nil {
				t.Fatalf("lease %d of %s: %v", i, holder, err)
			}
			doc.Leases = append(doc.Leases, l)
		}
	}
	doc.Checked = leasesDigest(doc.Leases)
	data, err := storage.EncodeDoc(doc)
	if err != nil {
		t.Fatal(err)
	}
	taken := len(data)
	(&breaking{by: "b" + long("x", 63), reason: reason}).bury(doc, doc.Leases, time.Now())
	doc.Leases = nil
	if data, err = storage.EncodeDoc(doc); err != nil {
		t.Fatal(err)
	}
	t.Logf("leases.json at its bounds: %d KiB; every lease broken: %d KiB", taken>>10, len(data)>>10)
	if len(data) > lockedfile.MaxDocument/2 {
		t.Errorf("leases.json can grow to %d bytes, more than half the %d every reader reads", len(data), lockedfile.MaxDocument)
	}
}

// Issue 46, item 4: what a take, a hook check and aipm status cost is
// bounded, in steps of the lease matcher, by the bounds of the patterns
// and of the document, whatever patterns the holders chose: here the
// most costly the bounds let them take through TakeLease (every pair of
// names meeting but the last, each meeting after a scan of a name of 250
// characters, globs against long names and long names against globs).
// The bound is a few million steps: milliseconds. Before, one take of 40
// leases of 64 such globs ran 43 s.
func TestLeaseCostBounded(t *testing.T) {
	ctx := context.Background()
	s, cfg := leadAndCoder(t)
	globs := func(tag string, n int) []string {
		var paths []string
		for j := range n {
			paths = append(paths, fmt.Sprintf("*a*/%s%02d", tag, j))
		}
		return paths
	}
	longNames := func(tag string, n int) []string {
		var paths []string
		for j := range n {
			paths = append(paths, strings.Repeat("b", 244)+fmt.Sprintf("a/%s%02d", tag, j))
		}
		return paths
	}
	take := func(holder string, paths []string) int64 {
		t.Helper()
		before := s.leaseSteps.Load()
		if _, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: holder, Paths: paths}); err != nil {
			t.Fatalf("%s's take: %v", holder, err)
		}
		return s.leaseSteps.Load() - before
	}
	// The bound of one take (leaseMatcher: each pair of patterns costs at
	// most a step per name and per byte of each).
	takeBound := int64(maxLeasePaths*maxLeasesPaths*maxLeaseNames + maxLeasesPaths*maxHolderText + maxLeasePaths*maxLeasesText)
	for g := range 6 {
		take(fmt.Sprintf("g%d", g), globs(fmt.Sprintf("g%d", g), maxHolderPaths))
	}
	perHolder := maxHolderText / 256
	take("f0", longNames("f0", perHolder))
	take("f1", longNames("f1", perHolder))
	for _, tc := range []struct {
		holder string
		paths  []string
	}{
		{"coder", longNames("c", perHolder)},
		{"lead", globs("l", maxHolderPaths)},
	} {
		steps := take(tc.holder, tc.paths)
		t.Logf("%s's take: %d steps (bound %d)", tc.holder, steps, takeBound)
		if steps > takeBound {
			t.Errorf("%s's take took %d steps, more than the %d its bounds allow", tc.holder, steps, takeBound)
		}
		if steps < 100_000 {
			t.Errorf("%s's take took %d steps: the test no longer builds the costly case", tc.holder, steps)
		}
	}

	checkReadCosts(t, s)
}

// The star-heavy globs are refused before they are compared with
// anything.
func TestStarHeavyGlobsRefused(t *testing.T) {
	ctx := context.Background()
	s, cfg := leadAndCoder(t)
	star := strings.Repeat("*a", 40) + "*"
	var heavy []string
	for i := range maxLeasePaths {
		heavy = append(heavy, fmt.Sprintf("%s/%s%d", star, star, i))
	}
	if _, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: "mallory", Paths: heavy}); !errors.Is(err, storage.ErrInvalid) || !strings.Contains(err.Error(), "a name with * may have") {
		t.Errorf("a take of star-heavy globs: %v; want it refused for its globs' length", err)
	}
}

// Issue 46, item 6: leases edited by hand that protect nothing, or claim
// more than lease_max_ttl, are read by one rule: an unusable path
// protects nothing, a lease with no other protects nothing at all, an
// expiry past createdAt + lease_max_ttl counts as ending then, a lease
// without a createdAt or created in the future has ended. aipm doctor
// reports each, saying how to fix it; a take leaves them as they are.
func TestLeasesEditedByHandProtectNothing(t *testing.T) {
	ctx := context.Background()
	s, cfg := leadAndCoder(t)
	now := time.Now().UTC()
	at := func(d time.Duration) string { return `"` + now.Add(d).Format(time.RFC3339) + `"` }
	lease := func(id, paths, created, expires string) string {
		if created != "" {
			created = `"createdAt": ` + created + `, `
		}
		return fmt.Sprintf(`{"id": %q, "holder": "lead", "paths": %s, "exclusive": true, %s"expiresAt": %s}`, id, paths, created, expires)
	}
	entries := []string{
		lease("lse_dot", `["."]`, at(0), at(time.Hour)),
		lease("lse_empty", `[""]`, at(0), at(time.Hour)),
		lease("lse_abs", `["/etc"]`, at(0), at(time.Hour)),
		lease("lse_up", `["../x"]`, at(0), at(time.Hour)),
		lease("lse_y9999", `["src"]`, at(-9*time.Hour), `"9999-01-01T00:00:00Z"`),
		lease("lse_long", `["docs"]`, at(0), `"9999-01-01T00:00:00Z"`),
		lease("lse_future", `["web"]`, `"9999-01-01T00:00:00Z"`, `"9999-01-01T01:00:00Z"`),
		lease("lse_nocreated", `["lib"]`, "", at(time.Hour)),
		lease("lse_mixed", `["ok", "../bad"]`, at(0), at(time.Hour)),
	}
	if err := os.MkdirAll(filepath.Dir(s.files.LeasesPath()), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.files.LeasesPath(), []byte("{\"leases\": [\n"+strings.Join(entries, ",\n")+"\n]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(when string) { checkHandEditedLeases(t, s, cfg, when) }
	check("as edited")
	said := leaseProblems(t, s)
	for _, want := range []string{
		`lse_dot of lead: path "." protects nothing`, `lse_empty of lead: path "" protects nothing`, `lse_abs of lead: path "/etc" protects nothing`,
		`lse_up of lead: path "../x" protects nothing`, "nor does the lease, which has no other", "lse_y9999 of lead expires at 9999-01-01",
		"lse_long of lead expires at 9999-01-01T00:00:00Z, more than lease_max_ttl (8h0m0s)", "lse_future of lead was created at 9999",
		"lse_nocreated of lead has no createdAt", `lse_mixed of lead: path "../bad" protects nothing`,
	} {
		if !strings.Contains(said, want) {
			t.Errorf("doctor does not say %q:\n%s", want, said)
		}
	}
	if strings.Count(said, "\n")+1 != len(entries) || !strings.Contains(said, "aipm leases break") {
		t.Errorf("doctor said:\n%s\nwant %d problems, each saying how to fix it", said, len(entries))
	}
	if _, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: "coder", Paths: []string{"a.go"}}); err != nil {
		t.Fatalf("a take beside the leases that protect nothing: %v", err)
	}
	check("after a take")
	if after := leaseProblems(t, s); !strings.Contains(after, `lse_dot of lead: path "." protects nothing`) {
		t.Errorf("after a take, doctor no longer reports lse_dot:\n%s", after)
	}
}

// checkHandEditedLeases checks what the readers make of
// TestLeasesEditedByHandProtectNothing's leases: only lse_long (to
// lease_max_ttl) and lse_mixed's usable path protect.
func checkHandEditedLeases(t *testing.T, s *Store, cfg *storage.Config, when string) {
	t.Helper()
	blocked, err := s.LeaseCheck("coder", []string{"a.go", "etc/x", "x", "src/a.go", "docs/a.md", "web/a", "lib/a", "ok/a", "bad"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range blocked {
		got = append(got, b.Path+" by "+b.Lease.ID)
	}
	if want := []string{"docs/a.md by lse_long", "ok/a by lse_mixed"}; !slices.Equal(got, want) {
		t.Errorf("%s: blocked %v, want %v", when, got, want)
	}
	leases, err := s.Leases()
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, l := range leases {
		if l.Holder != "lead" {
			continue
		}
		listed = append(listed, l.ID+" "+strings.Join(l.Paths, ","))
		if l.ID == "lse_long" && !l.ExpiresAt.Equal(l.CreatedAt.Add(cfg.Defaults.LeaseMaxTTL.Duration)) {
			t.Errorf("%s: lse_long ends %v, want lease_max_ttl after %v", when, l.ExpiresAt, l.CreatedAt)
		}
	}
	if want := []string{"lse_long docs", "lse_mixed ok"}; !slices.Equal(listed, want) {
		t.Errorf("%s: listed %v, want %v", when, listed, want)
	}
}

// leaseProblems is what aipm doctor says of leases.json, a line each.
func leaseProblems(t *testing.T, s *Store) string {
	t.Helper()
	problems, err := s.Doctor(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, p := range problems {
		if strings.HasSuffix(p.Path, "leases.json") {
			said = append(said, p.String())
		}
	}
	return strings.Join(said, "\n")
}

// checkReadCosts: TestLeaseCostBounded's leases read by a hook's check of
// a file (and of names no file has) and by aipm status cost at most their
// bounds, status nothing at all when they are as aipm wrote them.
func checkReadCosts(t *testing.T, s *Store) {
	t.Helper()
	before := s.leaseSteps.Load()
	name := strings.Repeat("b", 244) + "a/zz"
	if blocked, err := s.LeaseCheck("nobody", []string{name}); err != nil || len(blocked) != 0 {
		t.Fatalf("check: %v, %v", blocked, err)
	}
	checkBound := int64(maxLeasesPaths * (maxLeaseNames + 2*maxLeasePattern))
	if steps := s.leaseSteps.Load() - before; steps > checkBound {
		t.Errorf("a hook's check of one file took %d steps, more than %d", steps, checkBound)
	}
	// Names no file has: one name too long, and a path too deep for any
	// pattern to reach below its 32nd name.
	deep := strings.Repeat("b/", 2000) + "a"
	before = s.leaseSteps.Load()
	if blocked, err := s.LeaseCheck("nobody", []string{strings.Repeat("b", 5000) + "a/zz", deep}); err != nil || len(blocked) != 0 {
		t.Fatalf("check: %v, %v", blocked, err)
	}
	if steps := s.leaseSteps.Load() - before; steps > checkBound {
		t.Errorf("a hook's check of two absurd names took %d steps, more than %d", steps, checkBound)
	}

	before = s.leaseSteps.Load()
	leases, overlaps, err := s.LeasesAndOverlaps()
	if err != nil || len(overlaps) != 0 || len(leases) != 10 {
		t.Fatalf("LeasesAndOverlaps: %d leases, %v, %v", len(leases), overlaps, err)
	}
	if steps := s.leaseSteps.Load() - before; steps != 0 {
		t.Errorf("aipm status compared leases as aipm wrote them: %d steps", steps)
	}
	before = s.leaseSteps.Load()
	if o, compared := s.leaseOverlaps(leases); len(o) != 0 || !compared {
		t.Fatalf("overlaps %v, compared %v", o, compared)
	}
	allBound := int64(maxLeasesPaths*maxLeasesPaths*maxLeaseNames + 2*maxLeasesPaths*maxLeasesText)
	if steps := s.leaseSteps.Load() - before; steps > allBound {
		t.Errorf("comparing every pair took %d steps, more than %d", steps, allBound)
	}
}
