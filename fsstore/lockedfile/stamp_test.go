package lockedfile

import (
	"context"
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
}

// Moved carries every entry valid at one stamp to another, and no other.
func TestStatCacheMoved(t *testing.T) {
	a, b, c := Stamp{Ino: 1, Size: 10}, Stamp{Ino: 1, Size: 20}, Stamp{Ino: 2, Size: 10}
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

// A value read from a file changed within Racy's window is not kept, and
// drops what was kept for its key: a rename-replace can bring back the
// inode number, size and coarse modification time of a version read a
// moment ago.
func TestStatCachePutRacy(t *testing.T) {
	now := time.Now()
	settled := Stamp{Ino: 1, Size: 10, MTime: now.Add(-time.Second)}
	fresh := Stamp{Ino: 1, Size: 10, MTime: now}
	wholeSeconds := Stamp{Ino: 3, Size: 10, MTime: now.Add(-time.Second).Truncate(time.Second)}
	for _, tc := range []struct {
		name   string
		stamps []Stamp
		kept   bool
	}{
		{"settled", []Stamp{settled}, true},
		{"changed just now", []Stamp{fresh}, false},
		{"one of two changed just now", []Stamp{settled, fresh}, false},
		{"a missing file", []Stamp{{}}, true},
		{"whole seconds, one ago", []Stamp{wholeSeconds}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cache StatCache[string]
			cache.Put("k", "v", tc.stamps...)
			if _, ok := cache.Get("k", tc.stamps...); ok != tc.kept {
				t.Errorf("kept = %v, want %v", ok, tc.kept)
			}
		})
	}
	var cache StatCache[string]
	cache.Put("k", "old", settled)
	cache.Put("k", "new", fresh)
	if v, ok := cache.Get("k", settled); ok {
		t.Errorf("a racy Put left %q kept", v)
	}
}
