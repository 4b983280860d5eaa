package lockedfile

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// waitFilled fills p's pool now, as a process does before it exits.
func waitFilled(t *testing.T, _ *sparePool) {
	t.Helper()
	fillAll()
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return Inode(fi)
}

// TestSparePool: an atomic write below a pool's root takes a spare made
// ahead (the document is that inode, with the document's mode and bytes),
// the pool is filled again in the background, and a write with the pool
// empty makes its own file as before.
func TestSparePool(t *testing.T) {
	root := t.TempDir()
	UseSpares(root, filepath.Join(root, "spare"))
	p := poolFor(root)
	if p == nil {
		t.Fatal("no pool for its root")
	}
	doc := filepath.Join(root, "docs", "a.json")
	if err := os.Mkdir(filepath.Dir(doc), 0o755); err != nil {
		t.Fatal(err)
	}
	// The pool is empty: the write makes its file, and starts the refill.
	if err := WriteAtomic(doc, []byte(`{"v":1}`), 0o644, true, nil); err != nil {
		t.Fatal(err)
	}
	waitFilled(t, p)
	for n := range sparesKept {
		if fi, err := os.Lstat(filepath.Join(p.dir, strconv.Itoa(n))); err != nil || fi.Size() != 0 || fi.Mode().Perm() != 0o600 {
			t.Fatalf("spare %d: %v %v", n, fi, err)
		}
	}
	if fi, err := os.Stat(p.dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("pool directory: %v %v", fi, err)
	}
	spare := inode(t, filepath.Join(p.dir, "0"))
	if err := WriteAtomic(doc, []byte(`{"v":2}`), 0o644, true, nil); err != nil {
		t.Fatal(err)
	}
	if got := inode(t, doc); got != spare {
		t.Errorf("the document is inode %d, not the spare's %d", got, spare)
	}
	if data, err := os.ReadFile(doc); err != nil || string(data) != `{"v":2}` {
		t.Errorf("document holds %q (%v)", data, err)
	}
	if fi, _ := os.Stat(doc); fi.Mode().Perm() != 0o644 {
		t.Errorf("document mode %v, want 0644", fi.Mode().Perm())
	}
	waitFilled(t, p)
	if _, err := os.Lstat(filepath.Join(p.dir, "0")); err != nil {
		t.Errorf("the spare taken was not made again: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(doc), ".*"))
	if len(left) != 0 {
		t.Errorf("temp files left beside the document: %v", left)
	}
}

// TestSpareNotFresh: a name in the pool that is not a fresh spare (a
// symbolic link, a second name of another file) is never written through:
// the write makes its own file and what the name pointed at is unchanged.
func TestSpareNotFresh(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, spare, victim string)
	}{
		{"symbolic link", func(t *testing.T, spare, victim string) {
			if err := os.Symlink(victim, spare); err != nil {
				t.Fatal(err)
			}
		}},
		{"hard link", func(t *testing.T, spare, victim string) {
			if err := os.Link(victim, spare); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			pool := filepath.Join(root, "spare")
			UseSpares(root, pool)
			p := poolFor(root)
			if err := os.Mkdir(pool, 0o700); err != nil {
				t.Fatal(err)
			}
			victim := filepath.Join(root, "victim.json")
			if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
				t.Fatal(err)
			}
			for n := range sparesKept {
				tc.make(t, filepath.Join(pool, strconv.Itoa(n)), victim)
			}
			doc := filepath.Join(root, "a.json")
			if err := WriteAtomic(doc, []byte(`{"v":1}`), 0o644, false, nil); err != nil {
				t.Fatal(err)
			}
			waitFilled(t, p)
			if data, err := os.ReadFile(victim); err != nil || string(data) != "keep" {
				t.Errorf("the file behind the pool's name holds %q (%v)", data, err)
			}
			if data, err := os.ReadFile(doc); err != nil || string(data) != `{"v":1}` {
				t.Errorf("document holds %q (%v)", data, err)
			}
			var st syscall.Stat_t
			if err := syscall.Stat(victim, &st); err != nil || tc.name == "symbolic link" && st.Nlink != 1 {
				t.Errorf("victim: nlink %d (%v)", st.Nlink, err)
			}
		})
	}
}
