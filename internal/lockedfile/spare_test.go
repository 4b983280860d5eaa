package lockedfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// waitFilled fills the pools now, as a process does before it exits.
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
// nothing fills the pool but the process's fill (as it ends), and a write
// with the pool empty makes its own file as before.
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
	if _, err := os.Lstat(filepath.Join(p.dir, "0")); err == nil {
		t.Error("the spare taken is back before the process's fill")
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
// symbolic link, a second name of another file, a file someone wrote, a
// directory), or a pool that is a symbolic link, is never written through
// nor moved: the write makes its own file and what was there is as it was.
func TestSpareNotFresh(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, pool, spare, victim string)
	}{
		{"symbolic link", func(t *testing.T, _, spare, victim string) { must(t, os.Symlink(victim, spare)) }},
		{"hard link", func(t *testing.T, _, spare, victim string) { must(t, os.Link(victim, spare)) }},
		{"a file with bytes", func(t *testing.T, _, spare, _ string) { must(t, os.WriteFile(spare, []byte("keep"), 0o600)) }},
		{"a directory", func(t *testing.T, _, spare, _ string) { must(t, os.Mkdir(spare, 0o700)) }},
		{"the pool a symbolic link", func(t *testing.T, pool, _, victim string) {
			if _, err := os.Lstat(pool + ".elsewhere"); err != nil {
				must(t, os.Rename(pool, pool+".elsewhere"))
				must(t, os.Symlink(pool+".elsewhere", pool))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			pool := filepath.Join(root, "spare")
			UseSpares(root, pool)
			p := poolFor(root)
			must(t, os.Mkdir(pool, 0o700))
			victim := filepath.Join(root, "victim.json")
			must(t, os.WriteFile(victim, []byte("keep"), 0o644))
			for n := range sparesKept {
				tc.make(t, pool, filepath.Join(pool, strconv.Itoa(n)), victim)
			}
			before := listing(t, root)
			doc := filepath.Join(root, "a.json")
			if err := WriteAtomic(doc, []byte(`{"v":1}`), 0o644, false, nil); err != nil {
				t.Fatal(err)
			}
			waitFilled(t, p)
			if data, err := os.ReadFile(doc); err != nil || string(data) != `{"v":1}` {
				t.Errorf("document holds %q (%v)", data, err)
			}
			after := strings.Replace(listing(t, root), "a.json 7\n", "", 1)
			after = strings.Replace(after, "spare/.gitignore 2\n", "", 1) // the pool's own
			if after != before {
				t.Errorf("the tree changed beyond the document:\nbefore:\n%safter:\n%s", before, after)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// listing is every name under root (links not followed) with its size, in
// order: what a write may not change but its own document.
func listing(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || path == root {
			return err
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		size := fi.Size()
		if fi.IsDir() || fi.Mode()&os.ModeSymlink != 0 {
			size = 0
		}
		fmt.Fprintf(&b, "%s %d\n", rel, size)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestSpareGivenBack: a write refused after it took a spare (the document
// changed since it was read) puts the spare back, emptied: a refused write
// leaves the pool as it was.
func TestSpareGivenBack(t *testing.T) {
	root := t.TempDir()
	UseSpares(root, filepath.Join(root, "spare"))
	p := poolFor(root)
	doc := filepath.Join(root, "a.json")
	must(t, WriteAtomic(doc, []byte(`{"v":1}`), 0o644, false, nil))
	waitFilled(t, p)
	_, read, err := ReadDoc(doc)
	must(t, err)
	must(t, os.WriteFile(doc, []byte(`{"v":"theirs"}`), 0o644)) // saved since it was read
	before := listing(t, root)
	if err := WriteAtomic(doc, []byte(`{"v":2}`), 0o644, false, &read); !errors.Is(err, ErrChanged) {
		t.Fatalf("write over a changed document: %v, want ErrChanged", err)
	}
	if after := listing(t, root); after != before {
		t.Errorf("the refused write changed the tree:\nbefore:\n%safter:\n%s", before, after)
	}
}
