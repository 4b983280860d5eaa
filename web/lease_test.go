package web_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"aipm/fsstore"
	"aipm/web"
)

// TestStateLeases: the State lists the live leases, oldest first, each
// with the other holders' leases it cannot be held with. TakeLease never
// makes such a pair, so each case is leases.json as a human could edit
// it; an expired lease is not shown.
func TestStateLeases(t *testing.T) {
	now := time.Now().UTC()
	lease := func(id, holder string, exclusive bool, paths ...string) fsstore.Lease {
		return fsstore.Lease{ID: id, Holder: holder, Paths: paths, Exclusive: exclusive, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	}
	expired := lease("lea_old", "tester", true, "src/a.go")
	expired.ExpiresAt = now.Add(-time.Second)
	for _, c := range []struct {
		name      string
		leases    []fsstore.Lease
		shown     []string
		conflicts map[string][]web.LeaseConflict // by lease id
	}{
		{
			name:   "two holders exclusive on one file",
			leases: []fsstore.Lease{lease("lea_1", "coder", true, "src/*.go"), lease("lea_2", "tester", true, "docs", "src/a.go")},
			shown:  []string{"lea_1", "lea_2"},
			conflicts: map[string][]web.LeaseConflict{
				"lea_1": {{LeaseID: "lea_2", Holder: "tester", Path: "src/*.go", Against: "src/a.go"}},
				"lea_2": {{LeaseID: "lea_1", Holder: "coder", Path: "src/a.go", Against: "src/*.go"}},
			},
		},
		{
			name:   "exclusive against shared",
			leases: []fsstore.Lease{lease("lea_1", "coder", false, "src"), lease("lea_2", "tester", true, "src/a.go")},
			shown:  []string{"lea_1", "lea_2"},
			conflicts: map[string][]web.LeaseConflict{
				"lea_1": {{LeaseID: "lea_2", Holder: "tester", Path: "src", Against: "src/a.go"}},
				"lea_2": {{LeaseID: "lea_1", Holder: "coder", Path: "src/a.go", Against: "src"}},
			},
		},
		{name: "shared with shared", leases: []fsstore.Lease{lease("lea_1", "coder", false, "src"), lease("lea_2", "tester", false, "src")}, shown: []string{"lea_1", "lea_2"}},
		{name: "one holder twice", leases: []fsstore.Lease{lease("lea_1", "coder", true, "src"), lease("lea_2", "coder", true, "src/a.go")}, shown: []string{"lea_1", "lea_2"}},
		{name: "apart", leases: []fsstore.Lease{lease("lea_1", "coder", true, "src"), lease("lea_2", "tester", true, "docs")}, shown: []string{"lea_1", "lea_2"}},
		{name: "an expired one", leases: []fsstore.Lease{expired, lease("lea_2", "coder", true, "src/a.go")}, shown: []string{"lea_2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			store, err := fsstore.Init(t.TempDir(), "leases")
			if err != nil {
				t.Fatal(err)
			}
			doc, _ := json.Marshal(map[string]any{"leases": c.leases})
			if err := os.MkdirAll(filepath.Dir(store.LeasesPath()), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(store.LeasesPath(), doc, 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			srv, err := web.Start(ctx, store, web.Options{})
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			defer func() { cancel(); srv.Wait() }()
			st := stateOf(t, srv)
			var shown []string
			for _, l := range st.Leases {
				shown = append(shown, l.ID)
				if !slices.Equal(l.Conflicts, c.conflicts[l.ID]) {
					t.Errorf("%s's conflicts %+v, want %+v", l.ID, l.Conflicts, c.conflicts[l.ID])
				}
			}
			if !slices.Equal(shown, c.shown) {
				t.Errorf("leases shown %q, want %q (problems: %q)", shown, c.shown, st.Problems)
			}
		})
	}
}

// TestBreakLeaseAction: a human breaks the leases on paths from the page,
// through BreakLeases (as aipm leases break): a reason is needed and told
// to the holder; an AI agent may not; nothing leased is refused.
func TestBreakLeaseAction(t *testing.T) {
	srv, store, _ := newBoard(t)
	v := visit(t, srv)
	ctx := context.Background()
	cfg, err := store.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	held, err := store.TakeLease(ctx, cfg, fsstore.LeaseRequest{Holder: "coder", Paths: []string{"src/*.go"}, Reason: "parser rewrite"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ body, want string }{
		{`{"paths":["src/a.go"]}`, "reason"},
		{`{"paths":[],"reason":"stuck"}`, "name the paths"},
		{`{"as":"coder","paths":["src/a.go"],"reason":"stuck"}`, "not a human"},
		{`{"paths":["docs/x.md"],"reason":"stuck"}`, "live lease on docs/x.md"},
		{`{"paths":"src/a.go","reason":"stuck"}`, "not the JSON"},
	} {
		if code, body := v.post(t, "/api/leases/break", c.body, nil); code != 400 || !strings.Contains(body, c.want) {
			t.Errorf("break %s: %d %s; want 400 saying %q", c.body, code, body, c.want)
		}
	}
	if ls, _ := store.Leases(); len(ls) != 1 {
		t.Fatalf("after refused breaks, leases %+v; want coder's still", ls)
	}
	if code, body := v.post(t, "/api/leases/break", `{"paths":["src/a.go"],"reason":"taking over the parser"}`, nil); code != 200 || !strings.Contains(body, held.ID) {
		t.Fatalf("break: %d %s; want 200 naming %s", code, body, held.ID)
	}
	if ls, _ := store.Leases(); len(ls) != 0 {
		t.Errorf("after the break, leases %+v; want none", ls)
	}
	notes, _ := store.NotificationsPath("coder")
	recs, _, _, _ := fsstore.ReadAll(notes)
	if len(recs) != 1 || !strings.Contains(string(recs[0].Data), "lead broke your lease") || !strings.Contains(string(recs[0].Data), "taking over the parser") {
		t.Errorf("coder's notifications %d, want one saying lead broke the lease and why", len(recs))
	}

	if st := stateOf(t, srv); len(st.Leases) != 0 {
		t.Errorf("the State after the break still lists %+v", st.Leases)
	}
	checkBreakByID(t, v, store, cfg, held)
}

// checkBreakByID: the page breaks the lease it shows, by id: not a lease
// taken since on an overlapping path, and not one that is gone (held,
// broken already).
func checkBreakByID(t *testing.T, v *visitor, store *fsstore.Store, cfg *fsstore.Config, held fsstore.Lease) {
	t.Helper()
	ctx := context.Background()
	shown, err := store.TakeLease(ctx, cfg, fsstore.LeaseRequest{Holder: "coder", Paths: []string{"src"}, Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	since, err := store.TakeLease(ctx, cfg, fsstore.LeaseRequest{Holder: "reviewer", Paths: []string{"src/a.go"}, Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ body, want string }{
		{`{"leaseId":"` + shown.ID + `"}`, "reason"},
		{`{"leaseId":"` + held.ID + `","reason":"stuck"}`, "no live lease " + held.ID},
	} {
		if code, body := v.post(t, "/api/leases/break", c.body, nil); code != 400 || !strings.Contains(body, c.want) {
			t.Errorf("break %s: %d %s; want 400 saying %q", c.body, code, body, c.want)
		}
	}
	if code, body := v.post(t, "/api/leases/break", `{"leaseId":"`+shown.ID+`","reason":"done with src"}`, nil); code != 200 || !strings.Contains(body, shown.ID) {
		t.Fatalf("break by id: %d %s; want 200 naming %s", code, body, shown.ID)
	}
	if ls, _ := store.Leases(); len(ls) != 1 || ls[0].ID != since.ID {
		t.Errorf("after breaking %s, leases %+v; want only %s", shown.ID, ls, since.ID)
	}
}
