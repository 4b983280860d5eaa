package lockedfile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// An append asked for its Change reports the file as it was just before
// the line and just after it, under the lock: Before is what another
// writer left, not what this Appender wrote last.
func TestAppendChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	mine, other := NewAppender(path, 0o644), NewAppender(path, 0o644)
	defer mine.Close()
	defer other.Close()
	write := func(a *Appender, line string) Change {
		t.Helper()
		var ch Change
		flush, err := a.Write(context.Background(), []byte(line), AppendOptions{Changed: &ch})
		if err != nil {
			t.Fatal(err)
		}
		if err := flush(); err != nil {
			t.Fatal(err)
		}
		return ch
	}
	stamp := func() Stamp {
		t.Helper()
		st, err := StampPath(path)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	write(mine, `{"id":"a"}`)
	before := stamp()
	ch := write(mine, `{"id":"b"}`)
	if ch.Before != before || ch.After != stamp() {
		t.Errorf("change %+v, want %+v -> %+v", ch, before, stamp())
	}
	write(other, `{"id":"c"}`)
	between := stamp()
	if ch = write(mine, `{"id":"d"}`); ch.Before != between || ch.After != stamp() {
		t.Errorf("after another writer: change %+v, want %+v -> %+v", ch, between, stamp())
	}
	if ch.Before.Size+int64(len(`{"id":"d"}`)+1) != ch.After.Size {
		t.Errorf("sizes %d -> %d: not one line", ch.Before.Size, ch.After.Size)
	}
	var none Change
	if _, err := mine.Write(context.Background(), []byte(`{"id":"d"}`), AppendOptions{Unless: []byte(`"d"`), Changed: &none}); err != nil || none != (Change{}) {
		t.Errorf("nothing written: change %+v (%v), want none", none, err)
	}
	// A writer died after all of a line but its newline: the next append
	// ends that line first, a change the caller did not see.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"id":"torn"}`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if ch = write(mine, `{"id":"e"}`); ch != (Change{}) {
		t.Errorf("after a torn last line: change %+v, want none", ch)
	}
	if ch = write(mine, `{"id":"f"}`); ch == (Change{}) {
		t.Error("the append after the mended one reported no change")
	}
}

// Moved carries every entry valid at one stamp to another, and no other.
func TestStatCacheMoved(t *testing.T) {
	at := time.Unix(1e9, 1)
	a, b, c := Stamp{Ino: 1, Size: 10, MTime: at}, Stamp{Ino: 1, Size: 20, MTime: at}, Stamp{Ino: 2, Size: 10, MTime: at}
	var cache StatCache[string]
	cache.Put("on a", "x", a, c)
	cache.Put("on c", "y", c)
	cache.Moved(a, b)
	for _, tc := range []struct {
		key    string
		stamps []Stamp
		ok     bool
	}{
		{"on a", []Stamp{b, c}, true},
		{"on a", []Stamp{a, c}, false},
		{"on c", []Stamp{c}, true},
	} {
		if _, ok := cache.Get(tc.key, tc.stamps...); ok != tc.ok {
			t.Errorf("Get(%s, %v) = %v, want %v", tc.key, tc.stamps, ok, tc.ok)
		}
	}
	cache.Moved(Stamp{}, a) // a missing file: nothing moves to it
	if _, ok := cache.Get("on c", a); ok {
		t.Error("an entry moved from the zero stamp")
	}
}

// Put keeps what was read under any stamp lockedfile's writers leave
// (they never give a path one stamp for two versions), except one from a
// file system that stamps whole seconds; PutSeen keeps nothing read from a
// file changed within Racy's window of when it was seen. Neither leaves an
// older value kept for the key when it keeps nothing.
func TestStatCachePut(t *testing.T) {
	now := time.Now()
	settled := Stamp{Ino: 1, Size: 10, MTime: now.Add(-time.Second)}
	fresh := Stamp{Ino: 1, Size: 10, MTime: now}
	wholeSeconds := Stamp{Ino: 3, Size: 10, MTime: now.Add(-time.Minute).Truncate(time.Second)}
	for _, tc := range []struct {
		name    string
		stamps  []Stamp
		put     bool // Put keeps it
		putSeen bool // PutSeen, seen now, keeps it
	}{
		{"settled", []Stamp{settled}, true, true},
		{"changed just now", []Stamp{fresh}, true, false},
		{"one of two changed just now", []Stamp{settled, fresh}, true, false},
		{"a missing file", []Stamp{{}}, true, true},
		{"whole seconds, a minute ago", []Stamp{wholeSeconds}, false, true},
		{"whole seconds, this second", []Stamp{{Ino: 4, Size: 10, MTime: now.Truncate(time.Second)}}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var put, seen StatCache[string]
			put.Put("k", "old", settled)
			put.Put("k", "v", tc.stamps...)
			seen.PutSeen("k", "old", now, settled)
			seen.PutSeen("k", "v", now, tc.stamps...)
			if v, ok := put.Get("k", tc.stamps...); ok != tc.put || ok && v != "v" {
				t.Errorf("Put: kept %q %v, want %v", v, ok, tc.put)
			}
			if v, ok := seen.Get("k", tc.stamps...); ok != tc.putSeen || ok && v != "v" {
				t.Errorf("PutSeen: kept %q %v, want %v", v, ok, tc.putSeen)
			}
			if _, ok := put.Get("k", settled); ok && !tc.put {
				t.Error("Put kept nothing but left the older value")
			}
		})
	}
}

// A file that WriteAtomic, Update or DropPrefix replaces gets a
// modification time after the one it replaces, even when that one is
// later than the clock (written within the same tick, or a little ahead):
// a path never shows one stamp for two versions, which is what Put relies
// on. A time far ahead (set by hand) is left for the clock's to replace.
func TestReplacementIsLater(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		replace func(path string) error
	}{
		{"WriteAtomic", func(path string) error {
			return WriteAtomic(path, []byte(`{"v":2}`+"\n"), 0o644, false, nil)
		}},
		{"Update", func(path string) error {
			_, err := Update(ctx, path, 0o644, false, 1, func([]byte, bool) ([]byte, error) { return []byte(`{"v":2}` + "\n"), nil })
			return err
		}},
		{"DropPrefix", func(path string) error {
			_, err := DropPrefix(ctx, path, DropOptions{}, func(*os.File, int64, uint64) (int64, error) {
				return int64(len(`{"v":1}` + "\n")), nil
			}, nil)
			return err
		}},
	} {
		for _, ahead := range []time.Duration{500 * time.Millisecond, time.Hour} {
			t.Run(fmt.Sprintf("%s/%v ahead", tc.name, ahead), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "f.jsonl")
				if err := os.WriteFile(path, []byte(`{"v":1}`+"\n"+`{"v":2}`+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				prev := time.Now().Add(ahead)
				if err := os.Chtimes(path, time.Time{}, prev); err != nil {
					t.Fatal(err)
				}
				if err := tc.replace(path); err != nil {
					t.Fatal(err)
				}
				fi, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				if far := ahead > time.Second; fi.ModTime().After(prev) == far {
					t.Errorf("replacement's time %v, replaced file's %v: want it after only when that is less than a second ahead", fi.ModTime(), prev)
				}
			})
		}
	}
}
