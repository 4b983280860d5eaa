package lockedfile

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"aipm/internal/testenv"
)

// rankedDir is a directory whose locks outer.*, inner.* and peer* are
// ranked 1, 2 and 3, and no other is.
func rankedDir(t *testing.T) string {
	dir := t.TempDir()
	RankLocks(dir, func(path string) Rank {
		switch name := filepath.Base(path); {
		case strings.HasPrefix(name, "outer."):
			return Rank{Order: 1, Name: "outer"}
		case strings.HasPrefix(name, "inner."):
			return Rank{Order: 2, Name: "inner"}
		case strings.HasPrefix(name, "peer"):
			return Rank{Order: 3, Name: "peer"}
		}
		return Rank{}
	})
	return dir
}

// reports collects the checker's reports for the rest of t.
func reports(t *testing.T) *[]*LockOrderError {
	var got []*LockOrderError
	t.Cleanup(OnLockOrderViolation(func(e *LockOrderError) { got = append(got, e) }))
	return &got
}

// The checker reports a lock waited for while one of an equal or higher
// rank is held, naming both and where each was taken; a lock taken without
// waiting is not checked, but what is waited for while it is held is.
func TestLockOrderReportsAWaitOutOfOrder(t *testing.T) {
	testenv.SkipWithoutLockRank(t)
	ctx := context.Background()
	type step struct {
		name string
		try  bool
	}
	for _, tc := range []struct {
		name         string
		steps        []step
		taking, held string // the report's locks; "" for none
	}{
		{"inner while outer", []step{{"outer.lock", false}, {"inner.lock", false}}, "", ""},
		{"outer while inner", []step{{"inner.lock", false}, {"outer.lock", false}}, "outer.lock", "inner.lock"},
		{"tried while inner", []step{{"inner.lock", false}, {"outer.lock", true}}, "", ""},
		{"waited for while tried", []step{{"inner.lock", true}, {"outer.lock", false}}, "outer.lock", "inner.lock"},
		{"two of one rank", []step{{"peer1.lock", false}, {"peer2.lock", false}}, "peer2.lock", "peer1.lock"},
		{"inner while a peer", []step{{"peer1.lock", false}, {"inner.lock", false}}, "inner.lock", "peer1.lock"},
		{"outer, inner, a peer", []step{{"outer.lock", false}, {"inner.lock", false}, {"peer1.lock", false}}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := rankedDir(t)
			got := reports(t)
			for _, s := range tc.steps {
				path := filepath.Join(dir, s.name)
				var unlock func()
				var err error
				if s.try {
					var ok bool
					unlock, ok, err = TryLock(path, 0o644)
					if err == nil && !ok {
						t.Fatalf("TryLock %s: held", s.name)
					}
				} else {
					unlock, err = Lock(ctx, path, 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
				defer unlock()
			}
			if tc.taking == "" {
				if len(*got) > 0 {
					t.Fatalf("lawful order reported:\n%v", (*got)[0])
				}
				return
			}
			if len(*got) != 1 {
				t.Fatalf("got %d reports, want 1: %v", len(*got), *got)
			}
			e := (*got)[0]
			if filepath.Base(e.Taking.Path) != tc.taking || filepath.Base(e.Held.Path) != tc.held {
				t.Errorf("report names %s taken while %s is held, want %s while %s", e.Taking.Path, e.Held.Path, tc.taking, tc.held)
			}
			msg := e.Error()
			for _, want := range []string{"lock order violation", e.Taking.Rank.Name, e.Held.Rank.Name, "TestLockOrderReportsAWaitOutOfOrder"} {
				if !strings.Contains(msg, want) {
					t.Errorf("report does not say %q:\n%s", want, msg)
				}
			}
		})
	}
}

// Every primitive that waits for a lock is checked, and what it released
// no longer counts.
func TestLockOrderCoversEveryLock(t *testing.T) {
	testenv.SkipWithoutLockRank(t)
	ctx := context.Background()
	dir := rankedDir(t)
	data := filepath.Join(dir, "outer.data") // rank 1, as outer.lock
	if err := os.WriteFile(data, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		take func() error
	}{
		{"Lock", func() error {
			unlock, err := Lock(ctx, data, 0o644)
			if err == nil {
				unlock()
			}
			return err
		}},
		{"append", func() error {
			a := NewAppender(data, 0o644)
			defer a.Close()
			flush, err := a.Write(ctx, []byte("y"), AppendOptions{})
			if err == nil {
				err = flush()
			}
			return err
		}},
		{"Update", func() error {
			_, err := Update(ctx, data, 0o644, false, 1, func([]byte, bool) ([]byte, error) { return nil, nil })
			return err
		}},
		{"ReadLocked", func() error { _, _, err := ReadLocked(ctx, data, 0o644); return err }},
		{"DropPrefix", func() error {
			_, err := DropPrefix(ctx, data, DropOptions{DryRun: true}, func(*os.File, int64, uint64) (int64, error) { return 0, nil }, nil)
			return err
		}},
		{"ReadRecord", func() error { _, err := ReadRecord(data); return err }},
		{"SwapRecord", func() error {
			return SwapRecord(ctx, data, 0o644, false, func(old []byte) ([]byte, error) { return old, nil })
		}},
		// Uncontended, a HeldRecord takes its flock without waiting, but it
		// waits for its mutex: checked all the same.
		{"HeldRecord.Read", func() error {
			r := NewHeldRecord(data, 0o644)
			defer r.Close()
			_, err := r.Read()
			return err
		}},
		{"HeldRecord.Swap", func() error {
			r := NewHeldRecord(data, 0o644)
			defer r.Close()
			return r.Swap(ctx, false, func(old []byte) ([]byte, error) { return old, nil })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := reports(t)
			if err := tc.take(); err != nil { // nothing held: lawful
				t.Fatal(err)
			}
			if len(*got) != 0 {
				t.Fatalf("lawful order reported:\n%v", (*got)[0])
			}
			unlock, err := Lock(ctx, filepath.Join(dir, "inner.lock"), 0o644)
			if err != nil {
				t.Fatal(err)
			}
			err = tc.take() // rank 1 while rank 2 is held
			unlock()
			if err != nil {
				t.Fatal(err)
			}
			if len(*got) != 1 || (*got)[0].Taking.Path != data || filepath.Base((*got)[0].Held.Path) != "inner.lock" {
				t.Fatalf("reports %v, want one of %s waited for while inner.lock is held", *got, data)
			}
			if unlock, err = Lock(ctx, filepath.Join(dir, "outer.lock"), 0o644); err != nil {
				t.Fatal(err)
			}
			unlock()
			if len(*got) != 1 {
				t.Fatalf("a lock released still counts: %v", (*got)[1:])
			}
		})
	}
}

// By default a report panics, with both locks' names and the stack; a
// lock below a ranked directory without a rank is reported too.
func TestLockOrderPanicsByDefault(t *testing.T) {
	testenv.SkipWithoutLockRank(t)
	ctx := context.Background()
	dir := rankedDir(t)
	for _, tc := range []struct {
		name  string
		first string // held before; "" for none
		then  string
		want  []string
	}{
		{"out of order", "inner.lock", "outer.lock", []string{"lock order violation", "waiting for " + filepath.Join(dir, "outer.lock") + " (outer, rank 1)", "holding " + filepath.Join(dir, "inner.lock") + " (inner, rank 2)", "lockedfile.TestLockOrderPanicsByDefault"}},
		{"unranked", "", "stray.lock", []string{"stray.lock (no rank) has no rank"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.first != "" {
				unlock, err := Lock(ctx, filepath.Join(dir, tc.first), 0o644)
				if err != nil {
					t.Fatal(err)
				}
				defer unlock()
			}
			msg := func() (msg any) {
				defer func() { msg = recover() }()
				if unlock, err := Lock(ctx, filepath.Join(dir, tc.then), 0o644); err == nil {
					unlock()
				}
				return nil
			}()
			s, _ := msg.(string)
			for _, want := range tc.want {
				if !strings.Contains(s, want) {
					t.Errorf("panic %q does not say %q", s, want)
				}
			}
		})
	}
}
