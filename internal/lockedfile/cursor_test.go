package lockedfile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"
)

func line(id string) string {
	return fmt.Sprintf(`{"id":%q,"pad":%q}`, id, strings.Repeat("x", len(id)%7))
}

func appendIDs(t *testing.T, path string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if err := appendOnce(context.Background(), path, []byte(line(id)), AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// writeInPlace rewrites path's content on the same inode, as an editor
// that saves in place does.
func writeInPlace(t *testing.T, path string, ids ...string) {
	t.Helper()
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(line(id) + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeReplacing saves path by rename-replace (a new inode).
func writeReplacing(t *testing.T, path string, ids ...string) {
	t.Helper()
	tmp := path + ".new"
	writeInPlace(t, tmp, ids...)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

type delivery struct {
	id          string
	redelivered bool
}

func readAll(t *testing.T, path string, cur Cursor, limit int) ([]delivery, Cursor) {
	t.Helper()
	var out []delivery
	for {
		res, err := ReadPast(path, cur, ReadOptions{Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res.Records {
			out = append(out, delivery{gjson.GetBytes(r.Data, "id").String(), res.Redelivered[i]})
		}
		cur = res.Next
		if !res.More {
			return out, cur
		}
	}
}

// Every way a file can change under a cursor: nothing the reader has not
// had is skipped, and whatever comes again is marked.
func TestCursorAfterEdits(t *testing.T) {
	ids := func(s string) []string { return strings.Fields(s) }
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, path string)
		want string // ids returned after the edit, oldest first; * marks redelivered
	}{
		{"append only", func(t *testing.T, p string) { appendIDs(t, p, "m6") }, "m6"},
		{"in-place delete of a read line", func(t *testing.T, p string) {
			writeInPlace(t, p, ids("m1 m2 m4 m5")...)
			appendIDs(t, p, "m6")
		}, "m6"},
		{"deleted last-read line", func(t *testing.T, p string) {
			writeInPlace(t, p, ids("m1 m2 m3 m4")...)
			appendIDs(t, p, "m6", "m7")
		}, "m6 m7"},
		{"deleted last-read lines, ids out of file order", func(t *testing.T, p string) {
			writeInPlace(t, p, ids("m1 m2 m3")...)
			appendIDs(t, p, "a0") // sorts before every id read
		}, "a0"},
		{"in-place truncate then new lines", func(t *testing.T, p string) {
			writeInPlace(t, p)
			appendIDs(t, p, "n1", "n2", "n3-longer-than-before", "n4")
		}, "*n1 *n2 *n3-longer-than-before *n4"},
		{"rename-replace keeping the lines, then new ones", func(t *testing.T, p string) {
			writeReplacing(t, p, ids("m1 m2 m3 m4 m5")...)
			appendIDs(t, p, "m6")
		}, "m6"},
		{"rename-replace dropping a read line", func(t *testing.T, p string) {
			writeReplacing(t, p, ids("m2 m3 m4 m5")...)
			appendIDs(t, p, "m6")
		}, "m6"},
		{"everything remembered is gone", func(t *testing.T, p string) {
			writeReplacing(t, p, ids("x1 x2")...)
		}, "*x1 *x2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log.jsonl")
			appendIDs(t, path, ids("m1 m2 m3 m4 m5")...)
			got, cur := readAll(t, path, Cursor{}, 2)
			if len(got) != 5 {
				t.Fatalf("first read: %v", got)
			}
			tc.edit(t, path)
			got, cur = readAll(t, path, cur, 2)
			var s []string
			for _, d := range got {
				if d.redelivered {
					s = append(s, "*"+d.id)
				} else {
					s = append(s, d.id)
				}
			}
			if strings.Join(s, " ") != tc.want {
				t.Fatalf("after the edit: got %q, want %q", strings.Join(s, " "), tc.want)
			}
			// The cursor settles: nothing more, and no rescans of old lines.
			if again, _ := readAll(t, path, cur, 2); len(again) != 0 {
				t.Fatalf("a second read returned %v", again)
			}
		})
	}
}

// An inode number reused by a rename-replace save: the offset is measured in
// "the same" inode, but the record that ends there is another one.
func TestCursorInodeReuse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	appendIDs(t, path, "m1", "m2", "m3")
	_, cur := readAll(t, path, Cursor{}, 0)
	writeReplacing(t, path, "m2", "m3", "m4", "m5") // a line boundary where m3 ended

	fi, _ := os.Stat(path)
	cur.Inode = Inode(fi) // as if the new file had been given the old number
	got, _ := readAll(t, path, cur, 0)
	if fmt.Sprint(got) != "[{m4 false} {m5 false}]" {
		t.Fatalf("after a reused inode: %v", got)
	}
}

// A reader racing an editor that replaces the file by rename (under the
// file's lock, so no line is lost by the editor itself) and a writer: every
// line written is returned, none skipped, repeats only marked, no read
// starts mid-line.
func TestCursorUnderReplacingEditor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	const n = 1500
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(2)
	go func() { // the writer
		defer wg.Done()
		defer close(stop)
		appendNumbered(t, path, n)
	}()
	go func() { // the editor: copy, rename over, under the lock
		defer wg.Done()
		replaceUntil(t, path, stop)
	}()
	seen, cur := readUntil(t, path, stop)
	wg.Wait()
	rest, _ := readAll(t, path, cur, 0)
	for _, d := range rest {
		seen[d.id]++
	}
	var missing []string
	for i := 0; i < n; i++ {
		if id := fmt.Sprintf("w%05d", i); seen[id] == 0 {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%d lines never returned, first %v", len(missing), missing[:min(5, len(missing))])
	}
}

// appendNumbered appends lines w00000 up to n-1 to path, each again while
// the file was replaced under it. It reports other errors with t.Error and
// stops.
func appendNumbered(t *testing.T, path string, n int) {
	ctx := context.Background()
	for i := 0; i < n; i++ {
		for {
			err := appendOnce(ctx, path, []byte(line(fmt.Sprintf("w%05d", i))), AppendOptions{})
			if err == nil {
				break
			}
			if err != ErrReplaced {
				t.Error(err)
				return
			}
		}
	}
}

// replaceUntil replaces path by a copy renamed over it, under its lock,
// again and again until stop is closed. It reports errors with t.Error and
// stops.
func replaceUntil(t *testing.T, path string, stop <-chan struct{}) {
	ctx := context.Background()
	for k := 0; ; k++ {
		select {
		case <-stop:
			return
		default:
		}
		unlock, err := Lock(ctx, path, 0o644)
		if err != nil {
			t.Error(err)
			return
		}
		data, _ := os.ReadFile(path)
		tmp := fmt.Sprintf("%s.edit%d", path, k%2)
		os.WriteFile(tmp, data, 0o644)
		os.Rename(tmp, path)
		unlock()
	}
}

// readUntil reads path in batches of varying size until stop is closed
// and nothing more is there, checking that no read starts mid-line and
// every repeat is marked redelivered. It returns how many times each id
// was returned, and the cursor after the last read.
func readUntil(t *testing.T, path string, stop <-chan struct{}) (map[string]int, Cursor) {
	t.Helper()
	seen := map[string]int{}
	var cur Cursor
	reads := 0
	for done := false; !done; reads++ {
		select {
		case <-stop:
			done = true
		default:
		}
		res, err := ReadPast(path, cur, ReadOptions{Limit: 1 + reads%5})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Bad) > 0 {
			t.Fatalf("read started mid-line: %v", res.Bad)
		}
		for i, r := range res.Records {
			id := gjson.GetBytes(r.Data, "id").String()
			if seen[id] > 0 && !res.Redelivered[i] {
				t.Fatalf("%s returned again without being marked redelivered", id)
			}
			seen[id]++
		}
		cur = res.Next
		if done && res.More {
			done = false
		}
	}
	return seen, cur
}

// The remembered ids are bounded and in order.
func TestCursorRemembersFew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	var all []string
	for i := 0; i < 20; i++ {
		all = append(all, fmt.Sprintf("m%02d", i))
	}
	appendIDs(t, path, all...)
	_, cur := readAll(t, path, Cursor{}, 3)
	want := append(slices.Clone(all[20-Remembered:19]), "")
	if got := append(slices.Clone(cur.Earlier), ""); cur.LastID != "m19" || !slices.Equal(got, want) {
		t.Fatalf("cursor remembers %v then %s, want %v then m19", cur.Earlier, cur.LastID, all[20-Remembered:19])
	}
}

// SkipTo starts a read at a mark past the cursor, on the read's own
// descriptor, only when the mark is in the file the cursor was measured in
// (or the file now, for a cursor that never read) and its record still
// ends there.
func TestReadPastSkipTo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	appendIDs(t, path, "a", "b", "c", "d")
	all, err := ReadPast(path, Cursor{}, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	after := func(i int) Cursor { // the cursor past the i-th record
		c := Cursor{Offset: all.Records[i].End().Offset, Line: all.Records[i].End().Line, Inode: all.Next.Inode}
		c.LastID = gjson.GetBytes(all.Records[i].Data, "id").Str
		return c
	}
	moved := func(c Cursor, f func(*Cursor)) Cursor { f(&c); return c }
	for _, tc := range []struct {
		name    string
		cur     Cursor
		mark    Cursor
		skipped bool
		want    []string
	}{
		{"no mark", Cursor{}, Cursor{}, false, []string{"a", "b", "c", "d"}},
		{"a mark, a new reader", Cursor{}, after(1), true, []string{"c", "d"}},
		{"a mark past the cursor", after(0), after(2), true, []string{"d"}},
		{"a mark before the cursor", after(2), after(0), false, []string{"d"}},
		{"another record ends there", Cursor{}, moved(after(1), func(c *Cursor) { c.LastID = "x" }), false, []string{"a", "b", "c", "d"}},
		{"another file", Cursor{}, moved(after(1), func(c *Cursor) { c.Inode++ }), false, []string{"a", "b", "c", "d"}},
		{"past the end", Cursor{}, moved(after(3), func(c *Cursor) { c.Offset += 100 }), false, []string{"a", "b", "c", "d"}},
		{"not where a line ends", Cursor{}, moved(after(1), func(c *Cursor) { c.Offset-- }), false, []string{"a", "b", "c", "d"}},
	} {
		res, err := ReadPast(path, tc.cur, ReadOptions{SkipTo: tc.mark})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, r := range res.Records {
			got = append(got, gjson.GetBytes(r.Data, "id").Str)
		}
		if res.Skipped != tc.skipped || !slices.Equal(got, tc.want) {
			t.Errorf("%s: skipped %v, read %v; want %v, %v", tc.name, res.Skipped, got, tc.skipped, tc.want)
		}
	}
}

// TestReadPastTail: a read that reaches the end says how much of an
// unterminated last line is there, and which line it is; a limited read
// that stops before the end says nothing of it.
func TestReadPastTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.jsonl")
	if err := os.WriteFile(path, []byte(line("a")+"\n\n"+line("b")+"\n"+`{"id":"c","pa`), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := ReadPast(path, Cursor{}, ReadOptions{})
	if err != nil || len(res.Records) != 2 || res.Tail != int64(len(`{"id":"c","pa`)) || res.TailLine != 4 {
		t.Fatalf("ReadPast: %d records, tail %d on line %d, %v; want 2, %d on line 4", len(res.Records), res.Tail, res.TailLine, err, len(`{"id":"c","pa`))
	}
	if res, err = ReadPast(path, Cursor{}, ReadOptions{Limit: 1}); err != nil || res.Tail != 0 || res.TailLine != 0 {
		t.Fatalf("a limited read: tail %d on line %d, %v; want none", res.Tail, res.TailLine, err)
	}
	if res, err = ReadPast(path, res.Next, ReadOptions{}); err != nil || res.Tail == 0 || res.TailLine != 4 {
		t.Fatalf("from a cursor: tail %d on line %d, %v; want line 4", res.Tail, res.TailLine, err)
	}
	if err := os.WriteFile(path, []byte(line("a")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res, err = ReadPast(path, Cursor{}, ReadOptions{}); err != nil || res.Tail != 0 || res.TailLine != 0 {
		t.Fatalf("a file that ends with a newline: tail %d on line %d, %v", res.Tail, res.TailLine, err)
	}
}
