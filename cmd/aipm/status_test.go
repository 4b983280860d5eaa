package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"aipm/fsstore"
)

// TestStatusWatch: status --watch draws once, draws again when a file of
// the project changes (a new task, a new message: fsnotify through
// wake.Hub, not the 30 s recheck), and ends cleanly when its context is
// cancelled.
func TestStatusWatch(t *testing.T) {
	dir := t.TempDir()
	store, cfg := newChatProject(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		getenv := func(string) string { return "" }
		done <- run(ctx, []string{"--dir", dir, "status", "--watch", "--json"}, getenv, strings.NewReader(""), &stdout, &stderr)
	}()
	waitPrinted(t, &stdout, `"todo":0`)

	// a new collection directory (tasks/) and a task in it
	if _, err := store.CreateTask(context.Background(), cfg, fsstore.NewTask{Title: "watch me", Requester: "alice"}); err != nil {
		t.Fatal(err)
	}
	waitPrinted(t, &stdout, `"todo":1`)
	sendToBob(t, store, cfg, "are you there?")
	waitPrinted(t, &stdout, `"id":"bob","type":"ai","sessions":[],"unreadMessages":1`)

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run returned %v after cancel; want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("status --watch did not return after its context was cancelled")
	}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if !strings.HasPrefix(line, `{"project":"follow",`) {
			t.Errorf("not one JSON report per line: %q", line)
		}
	}
	if stderr.String() != "" {
		t.Errorf("stderr: %s", stderr.String())
	}
}

// TestTableColour: colour never shifts a column, and is off unless stdout
// is a terminal and NO_COLOR is unset.
func TestTableColour(t *testing.T) {
	tab := &table{header: []string{"ID", "STATUS", "TITLE"}, style: func(col int, cell string) string {
		if col == 1 {
			return statusStyle(cell)
		}
		return ""
	}}
	tab.add("a", "blocked", "one")
	tab.add("bb", "todo", "two")
	var plain, coloured strings.Builder
	if err := tab.print(&plain, false); err != nil {
		t.Fatal(err)
	}
	if err := tab.print(&coloured, true); err != nil {
		t.Fatal(err)
	}
	want := "ID  STATUS   TITLE\na   blocked  one\nbb  todo     two\n"
	if plain.String() != want {
		t.Errorf("plain table:\n%s\nwant\n%s", plain.String(), want)
	}
	if !strings.Contains(coloured.String(), "\x1b[31mblocked\x1b[0m  one") {
		t.Errorf("coloured table has no red blocked before its padding:\n%q", coloured.String())
	}
	if stripANSI(coloured.String()) != want {
		t.Errorf("colour shifted the columns:\n%s", stripANSI(coloured.String()))
	}

	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if e := newEnv(func(string) string { return "" }, nil, f, f); e.colour {
		t.Error("colour on for a regular file")
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		if e := newEnv(func(string) string { return "" }, nil, tty, tty); !e.colour {
			t.Error("colour off on a terminal")
		}
		if e := newEnv(func(k string) string { return map[string]string{"NO_COLOR": "1"}[k] }, nil, tty, tty); e.colour {
			t.Error("colour on with NO_COLOR set")
		}
	}
}

func stripANSI(s string) string {
	for {
		i := strings.Index(s, "\x1b[")
		if i < 0 {
			return s
		}
		j := strings.IndexByte(s[i:], 'm')
		s = s[:i] + s[i+j+1:]
	}
}
