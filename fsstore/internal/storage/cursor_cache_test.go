package storage

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// ReadCursors reuses what it read while the file is the same, and sees
// every change another process makes: a new version, a removal; what it
// returns is the caller's to change.
func TestReadCursorsKept(t *testing.T) {
	dir := t.TempDir()
	l := layout{project: dir, root: filepath.Join(dir, DirName)}
	mine, other := newFiles(l), newFiles(l) // two processes
	path, _ := l.ReadCursorPath("coder")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	set := func(offset int64) {
		t.Helper()
		_, err := UpdateDoc(context.Background(), other, path, ModeFile, func(c *Cursors, _ bool) error {
			if *c == nil {
				*c = Cursors{}
			}
			(*c)[StreamChat] = StreamCursor{Cursor: Cursor{Offset: offset, Earlier: []string{"msg_a"}}, Pending: &PendingBatch{Session: "ses_x", MessageIDs: []string{"msg_b"}}}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	read := func(step string, want int64) Cursors {
		t.Helper()
		c, err := mine.ReadCursors(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := c[StreamChat].Offset; got != want {
			t.Fatalf("%s: offset %d, want %d", step, got, want)
		}
		return c
	}
	read("none yet", 0)
	set(10)
	read("written", 10)
	c := read("again", 10)
	c[StreamChat].Pending.MessageIDs[0] = "changed"
	c[StreamChat].Earlier[0] = "changed"
	delete(c, StreamChat)
	if again := read("after the caller changed its copy", 10); again[StreamChat].Pending.MessageIDs[0] != "msg_b" || again[StreamChat].Earlier[0] != "msg_a" {
		t.Fatalf("the kept copy changed with the caller's: %+v", again[StreamChat])
	}
	set(20)
	read("rewritten", 20)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	read("removed", 0)
}
