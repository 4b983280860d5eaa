package watcher

import (
	"aipm/fsstore"
	"os"
	"testing"
)

// The watcher compacts at its start and again every [retention] every,
// with no file change to wake it.
func TestWatcherCompacts(t *testing.T) {
	p := newProject(t, "", nil)
	f, err := os.OpenFile(p.store.ConfigPath(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n[retention]\nevery = \"1s\"\nchat_lines = 2\n")
	f.Close()
	lines := func() int {
		path, _ := p.store.ChatPath("lead")
		recs, _, _, err := fsstore.ReadAll(path)
		if err != nil {
			t.Fatal(err)
		}
		return len(recs)
	}
	for range 5 {
		p.send("lead", "coder", "hello")
	}
	p.run()
	// lead's log holds only its sent copies: nothing for a reader
	eventually(t, "lead's chat compacted at the start", func() bool { return lines() == 2 })
	for range 3 {
		p.send("lead", "coder", "again")
	}
	if n := lines(); n != 5 {
		t.Fatalf("lead's chat holds %d lines, want 5 until the next compaction (a second away)", n)
	}
	eventually(t, "lead's chat compacted on schedule", func() bool { return lines() == 2 })
	if path, _ := p.store.ChatPath("coder"); len(readAll(t, path)) != 8 {
		t.Fatal("coder's chat (never read) lost a message")
	}
}

func readAll(t *testing.T, path string) []fsstore.Record {
	recs, _, _, err := fsstore.ReadAll(path)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}
