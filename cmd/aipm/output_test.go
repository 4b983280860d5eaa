package main

import (
	"aipm/internal/status"
	"aipm/internal/table"
	"os"
	"strings"
	"testing"
)

// TestTableColour: colour never shifts a column, and is off unless stdout
// is a terminal and NO_COLOR is unset.
func TestTableColour(t *testing.T) {
	tab := &table.Table{Header: []string{"ID", "STATUS", "TITLE"}, Style: func(col int, cell string) string {
		if col == 1 {
			return status.TaskStyle(cell)
		}
		return ""
	}}
	tab.Add("a", "blocked", "one")
	tab.Add("bb", "todo", "two")
	var plain, coloured strings.Builder
	if err := tab.Print(&plain, false, 0); err != nil {
		t.Fatal(err)
	}
	if err := tab.Print(&coloured, true, 0); err != nil {
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
