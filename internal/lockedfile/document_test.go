package lockedfile

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Update re-applies an edit when a lock-less writer saved the document
// between its read and its write, whichever way the writer saved, and
// gives up after the attempts it is given, having written nothing.
func TestUpdateReappliesAfterASave(t *testing.T) {
	for _, tc := range []struct {
		name string
		save func(path string, data []byte) error
	}{
		{"rename-replace", saveByRename},
		{"in place", func(path string, data []byte) error { return os.WriteFile(path, data, 0o644) }},
		// Saved after the stamp check: only the exchange's look at what it
		// took out sees it, and puts it back.
		{"just before the exchange", func(path string, data []byte) error {
			onceBeforeExchange(t, func() error { return saveByRename(path, data) })
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := newDoc(t)
			calls := 0
			races, err := Update(context.Background(), path, 0o644, false, 3, func(data []byte, exists bool) ([]byte, error) {
				calls++
				if calls == 1 { // a human saves while aipm edits
					if err := tc.save(path, append(bytes.Clone(data), "human\n"...)); err != nil {
						return nil, err
					}
				}
				return append(bytes.Clone(data), "aipm\n"...), nil
			})
			if err != nil || races != 1 || calls != 2 {
				t.Fatalf("Update: races %d, calls %d, err %v; want 1 race, 2 calls", races, calls, err)
			}
			if got, _ := os.ReadFile(path); string(got) != "a\nhuman\naipm\n" {
				t.Fatalf("document %q: a change was lost", got)
			}

			races, err = Update(context.Background(), path, 0o644, false, 2, func(data []byte, exists bool) ([]byte, error) {
				if err := tc.save(path, append(bytes.Clone(data), "again\n"...)); err != nil {
					return nil, err
				}
				return []byte("lost\n"), nil
			})
			if !errors.Is(err, ErrChanged) || races != 2 {
				t.Fatalf("always raced: races %d, err %v; want 2 and ErrChanged", races, err)
			}
			if got, _ := os.ReadFile(path); !bytes.HasSuffix(got, []byte("again\nagain\n")) {
				t.Fatalf("document %q: the human's saves were overwritten", got)
			}
			matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".doc.txt.tmp-*"))
			if len(matches) > 0 {
				t.Fatalf("temp files left: %v", matches)
			}
		})
	}
}

// A document removed while Update edits it is a change like a save:
// Update reads again (there is none now) and writes what edit makes of
// nothing, instead of failing on the exchange with the missing name.
func TestUpdateAfterARemoval(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remove func(path string) error
	}{
		{"while editing", os.Remove},
		{"just before the exchange", func(path string) error {
			onceBeforeExchange(t, func() error { return os.Remove(path) })
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := newDoc(t)
			var seen []bool
			races, err := Update(context.Background(), path, 0o644, false, 3, func(data []byte, exists bool) ([]byte, error) {
				seen = append(seen, exists)
				if len(seen) == 1 {
					if err := tc.remove(path); err != nil {
						return nil, err
					}
				}
				return []byte("b\n"), nil
			})
			if err != nil || races != 1 || len(seen) != 2 || !seen[0] || seen[1] {
				t.Fatalf("Update: races %d, edits saw existing %v, err %v; want 1 race, [true false], no error", races, seen, err)
			}
			if got, _ := os.ReadFile(path); string(got) != "b\n" {
				t.Fatalf("document %q, want b", got)
			}
		})
	}
}

// saveByRename saves data at path as most editors do: a file beside it,
// renamed over it.
func saveByRename(path string, data []byte) error {
	tmp := path + ".swp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// onceBeforeExchange runs do when the next WriteAtomic is about to
// exchange: a change there is one only the exchange can see.
func onceBeforeExchange(t *testing.T, do func() error) {
	testHookBeforeExchange = func(string) {
		testHookBeforeExchange = nil
		if err := do(); err != nil {
			t.Error(err)
		}
	}
}

// newDoc is a document holding "a\n" in a new directory; the test's end
// unsets testHookBeforeExchange.
func newDoc(t *testing.T) string {
	t.Helper()
	t.Cleanup(func() { testHookBeforeExchange = nil })
	path := filepath.Join(t.TempDir(), "doc.txt")
	if err := os.WriteFile(path, []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
