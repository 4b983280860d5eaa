package fsstore

import (
	"aipm/internal/helperproc"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"aipm/fsstore/internal/storage"
)

func init() { helperRoles["take-leases"] = helperTakeLeases }

// helperTakeLeases, as holder arg, once told to go (a line on stdin),
// tries n exclusive leases race/0 to race/(n-1), printing "won I" or
// "lost I" for each.
func helperTakeLeases(h *helperProc) error {
	cfg, err := h.store.files.LoadConfig()
	if err != nil {
		return err
	}
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return err
	}
	for i := 0; i < h.n; i++ {
		_, err := h.store.TakeLease(h.ctx, cfg, LeaseRequest{Holder: h.arg, Paths: []string{"race/" + strconv.Itoa(i)}, Reason: "race"})
		var conflict *LeaseConflictError
		switch {
		case err == nil:
			fmt.Fprintln(h.out, "won", i)
		case errors.As(err, &conflict):
			fmt.Fprintln(h.out, "lost", i)
		default:
			return err
		}
	}
	return nil
}

// Eight processes race for the same 64 paths, each taking them in
// order, all told to go at once (the first round races for a file that
// does not exist yet): every path has exactly one winner, and the file
// ends with exactly one lease per path.
func TestTakeLeaseRace(t *testing.T) {
	s := newTestStore(t)
	const procs, rounds = 8, maxHolderPaths // one holder may win every path
	wins := make([][]string, rounds)
	var mu sync.Mutex
	var wg sync.WaitGroup
	var gos []io.WriteCloser
	for p := range procs {
		holder := "h" + strconv.Itoa(p)
		cmd := helperproc.Command(t, "take-leases", s.files.ProjectDir(), holder, strconv.Itoa(rounds))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		gos = append(gos, in)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				verdict, n, _ := strings.Cut(sc.Text(), " ")
				i, err := strconv.Atoi(n)
				if err != nil || i < 0 || i >= rounds {
					t.Errorf("%s: %q", holder, sc.Text())
					continue
				}
				if verdict == "won" {
					mu.Lock()
					wins[i] = append(wins[i], holder)
					mu.Unlock()
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("%s: %v", holder, err)
			}
		}()
	}
	time.Sleep(200 * time.Millisecond) // let them reach their read of "go"
	for _, in := range gos {
		io.WriteString(in, "go\n")
		in.Close()
	}
	wg.Wait()
	for i, w := range wins {
		if len(w) != 1 {
			t.Errorf("race/%d won by %v, want exactly one", i, w)
		}
	}
	leases, err := s.Leases()
	if err != nil {
		t.Fatal(err)
	}
	if len(leases) != rounds {
		t.Errorf("%d leases on file, want %d", len(leases), rounds)
	}
}

func TestLeaseLifecycle(t *testing.T) {
	ctx := context.Background()
	s, cfg := leadAndCoder(t)
	take := func(holder string, shared bool, paths ...string) (Lease, error) {
		return s.TakeLease(ctx, cfg, LeaseRequest{Holder: holder, Paths: paths, Shared: shared, Reason: "parser work"})
	}
	a, err := take("coder", false, "src/parser")
	if err != nil {
		t.Fatal(err)
	}
	checkLeaseOverlaps(t, s, take, a)

	// Taking the same paths again renews: one lease, a later expiry.
	renewed, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: "coder", Paths: []string{"src/parser"}, TTL: 2 * time.Hour})
	if err != nil || !renewed.ExpiresAt.After(a.ExpiresAt) || renewed.Reason != "parser work" {
		t.Fatalf("renew: %v, %q, %v; want a later expiry and the old reason kept", renewed.ExpiresAt, renewed.Reason, err)
	}
	if leases, _ := s.Leases(); len(leases) != 5 || slices.ContainsFunc(leases, func(l Lease) bool { return l.ID == a.ID }) {
		t.Fatalf("after a renew: %+v, want 5 leases, %s replaced", leases, a.ID)
	}
	checkLeaseRelease(t, s, take)
	checkLeaseBreak(t, s)
}

// checkLeaseOverlaps: another's take overlapping a is refused, naming the
// holder, its path, the reason and how to ask, and nothing is written;
// elsewhere, the holder's own overlap, and shared beside shared pass.
func checkLeaseOverlaps(t *testing.T, s *Store, take func(holder string, shared bool, paths ...string) (Lease, error), a Lease) {
	t.Helper()
	_, err := take("tester", false, "src/parser/*.go")
	var conflict *LeaseConflictError
	if !errors.As(err, &conflict) || conflict.Lease.ID != a.ID || !errors.Is(err, ErrLeaseConflict) {
		t.Fatalf("overlapping take: %v, want a conflict with %s", err, a.ID)
	}
	for _, want := range []string{"src/parser/*.go", "coder", "src/parser", "parser work", "send_message"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("conflict %q does not say %q", err, want)
		}
	}
	if leases, _ := s.Leases(); len(leases) != 1 {
		t.Fatalf("%d leases after a refused take, want 1", len(leases))
	}
	for _, tc := range []struct {
		holder string
		shared bool
		path   string
	}{{"tester", false, "src/lexer"}, {"coder", false, "src/parser/ast.go"}, {"tester", true, "docs"}, {"writer", true, "docs/api.md"}} {
		if _, err := take(tc.holder, tc.shared, tc.path); err != nil {
			t.Errorf("take %s by %s: %v", tc.path, tc.holder, err)
		}
	}
	if _, err := take("coder", false, "docs/index.md"); !errors.Is(err, ErrLeaseConflict) {
		t.Errorf("exclusive inside shared leases: %v, want a conflict", err)
	}
}

// checkLeaseRelease: release by a path ends the holder's leases
// overlapping it, not another's; with no path, all of the holder's.
func checkLeaseRelease(t *testing.T, s *Store, take func(holder string, shared bool, paths ...string) (Lease, error)) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.ReleaseLeases(ctx, "tester", []string{"src/parser"}); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("release of another's lease: %v, want not found", err)
	}
	if ended, err := s.ReleaseLeases(ctx, "coder", []string{"src/parser/ast.go"}); err != nil || len(ended) != 2 {
		t.Fatalf("release src/parser/ast.go: %v %v, want src/parser and src/parser/ast.go ended", ended, err)
	}
	if _, err := take("tester", false, "src/parser/*.go"); err != nil {
		t.Fatalf("take after release: %v", err)
	}
	if _, err := s.ReleaseLeases(ctx, "coder", nil); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("release when coder holds nothing: %v, want not found", err)
	}
}

// checkLeaseBreak: a human breaks tester's lease on src/parser/*.go; its
// holder is told why.
func checkLeaseBreak(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.BreakLeases(ctx, "lead", []string{"src/parser/x.go"}, ""); !errors.Is(err, storage.ErrInvalid) {
		t.Errorf("break with no reason: %v, want invalid", err)
	}
	broken, err := s.BreakLeases(ctx, "lead", []string{"src/parser/x.go"}, "stuck")
	if err != nil || len(broken) != 1 || broken[0].Holder != "tester" {
		t.Fatalf("break: %v %v", broken, err)
	}
	notes, _, _, err := s.FollowNotifications("tester", storage.Cursor{})
	if err != nil || len(notes) != 1 || !strings.Contains(notes[0].Message, "stuck") || notes[0].From != "lead" {
		t.Errorf("tester told %+v, %v; want a notification from lead saying stuck", notes, err)
	}
	if _, err := s.BreakLeases(ctx, "lead", []string{"src/parser/x.go"}, "again"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("break of a broken lease: %v, want not found", err)
	}
}

// An expired lease, or one whose session ended, holds nothing: the next
// take drops it, with no daemon.
func TestLeaseEnds(t *testing.T) {
	ctx := context.Background()
	s, _ := leadAndCoder(t)
	key, err := s.AddAgent(ctx, NewAgent{ID: "tester", Type: storage.AgentAI})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := s.files.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	ses, _, err := s.Authenticate(ctx, cfg, "tester", key, "", storage.PurposeChat)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: "tester", Session: ses.ID, Paths: []string{"a.go"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: "tester", Session: ses.ID, Keep: true, Paths: []string{"b.go"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: "tester", Paths: []string{"c.go"}, TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EndSession(ctx, ses.ID, "logout"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: "coder", Paths: []string{"a.go"}}); err != nil {
		t.Errorf("a lease of an ended session still holds: %v", err)
	}
	if _, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: "coder", Paths: []string{"b.go"}}); !errors.Is(err, ErrLeaseConflict) {
		t.Errorf("a kept lease ended with its session: %v", err)
	}
	time.Sleep(1100 * time.Millisecond)
	if _, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: "coder", Paths: []string{"c.go"}}); err != nil {
		t.Errorf("an expired lease still holds: %v", err)
	}
	blocking, err := s.LeaseCheck("coder", []string{"a.go", "b.go"})
	if err != nil || len(blocking) != 1 || blocking[0].Lease.Holder != "tester" || blocking[0].Path != "b.go" {
		t.Errorf("LeaseCheck(coder, a.go b.go) = %v, %v; want tester's on b.go", blocking, err)
	}
	if blocking, _ := s.LeaseCheck("tester", []string{"b.go"}); len(blocking) != 0 {
		t.Errorf("the holder's own lease blocks it: %v", blocking)
	}
}

// Bad requests are refused with a sentence and change nothing.
func TestTakeLeaseRefuses(t *testing.T) {
	ctx := context.Background()
	s, cfg := leadAndCoder(t)
	for _, req := range []LeaseRequest{
		{Holder: "coder"},
		{Holder: "coder", Paths: []string{"../x"}},
		{Holder: "coder", Paths: []string{".ai-pm/tasks"}},
		{Holder: "../x", Paths: []string{"a"}},
		{Holder: "coder", Paths: []string{"a"}, TTL: 48 * time.Hour},
		{Holder: "coder", Paths: []string{"a"}, Reason: strings.Repeat("x", MaxLeaseReason+1)},
		{Holder: "coder", Paths: make([]string, maxLeasePaths+1)},
		{Holder: "coder", Paths: []string{"a"}, Reason: "a\x01b"},
		{Holder: "coder", Paths: []string{"a"}, Reason: "a\xffb"},
		{Holder: "coder", Paths: []string{"a\x01b"}},
	} {
		if _, err := s.TakeLease(ctx, cfg, req); err == nil {
			t.Errorf("TakeLease(%+v) taken", req)
		}
	}
	if _, err := os.Stat(s.files.LeasesPath()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused take wrote %s", s.files.LeasesPath())
	}
	for i := range maxHolderPaths {
		if _, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: "coder", Paths: []string{"f" + strconv.Itoa(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: "coder", Paths: []string{"one-more"}}); !errors.Is(err, storage.ErrInvalid) || !strings.Contains(err.Error(), "lease a directory") {
		t.Errorf("a lease past the most one holder may hold: %v", err)
	}
	if _, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: "coder", Paths: []string{"f0"}}); err != nil {
		t.Errorf("a renewal at the most: %v", err)
	}
}

// A renewal extends: taking the same paths again without keep, a reason or
// a long ttl keeps the kept lease kept, its reason and its later end.
func TestLeaseRenewKeeps(t *testing.T) {
	ctx := context.Background()
	s, cfg := leadAndCoder(t)
	first, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: "coder", Session: "ses_01M7YZWACRA0328GMTHNDHB18Z", Keep: true, Paths: []string{"src"}, Reason: "the long job", TTL: 8 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: "coder", Session: "ses_01M7YZWACRA0328GMTHNDHB18Y", Paths: []string{"src"}})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Keep || again.Reason != "the long job" || again.ExpiresAt.Before(first.ExpiresAt) {
		t.Errorf("renewed %+v; want kept, the old reason, ending no sooner than %v", again, first.ExpiresAt)
	}
	if leases, _ := s.Leases(); len(leases) != 1 {
		t.Errorf("%d leases after a renewal, want 1", len(leases))
	}
	// leases/ keeps itself out of git, whatever .ai-pm/.gitignore says.
	if data, err := os.ReadFile(filepath.Join(filepath.Dir(s.files.LeasesPath()), ".gitignore")); err != nil || !strings.Contains(string(data), "\n*\n") {
		t.Errorf("leases/.gitignore: %q, %v", data, err)
	}
}

// A hand edit of leases.json: a path in another form is compared in its
// clean form, a session id that can name no session ends its lease, a
// session file that cannot be read keeps it, and a damaged file is an
// error, never "no leases".
func TestLeasesEditedByHand(t *testing.T) {
	s, _ := leadAndCoder(t)
	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	created := time.Now().UTC().Format(time.RFC3339)
	write := func(body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(s.files.LeasesPath()), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(s.files.LeasesPath(), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sessions := s.files.CollectionDir(storage.Sessions)
	if err := os.MkdirAll(sessions, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sessions, "ses_01M7YZWACRA0328GMTHNDHB18Z.json"), []byte("{damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	write(`{"leases": [
		{"id": "lse_1", "holder": "lead", "paths": ["./src/"], "exclusive": true, "createdAt": "` + created + `", "expiresAt": "` + later + `"},
		{"id": "lse_2", "holder": "lead", "session": "not-a-session", "paths": ["docs"], "exclusive": true, "createdAt": "` + created + `", "expiresAt": "` + later + `"},
		{"id": "lse_3", "holder": "lead", "session": "ses_01M7YZWACRA0328GMTHNDHB18Z", "paths": ["web"], "exclusive": true, "createdAt": "` + created + `", "expiresAt": "` + later + `"}
	]}`)
	blocked, err := s.LeaseCheck("coder", []string{"src/a.go", "docs/a.md", "web/app.js"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range blocked {
		got = append(got, b.Path)
	}
	if want := []string{"src/a.go", "web/app.js"}; !slices.Equal(got, want) {
		t.Errorf("blocked %v, want %v", got, want)
	}
	write(`{"leases": [`)
	if _, err := s.LeaseCheck("coder", []string{"src/a.go"}); err == nil {
		t.Error("a damaged leases.json read as no leases")
	}
}
