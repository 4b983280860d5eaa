// Package table is how the CLI prints a table and what its cells show:
// columns aligned, coloured without shifting, the free-text column cut to
// the terminal's width; ids shortened to what tells them apart; times as
// ages; sizes in KiB and MiB. --json and --quiet always print the whole values.
package table

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// Table is the one table printer: columns aligned to their widest cell,
// two spaces apart; style, if set, colours a cell after padding (so colour
// never shifts a column) when colour is on. cut, if above 0, is the column
// of free text (a title) that gives way when a line would be wider than
// width: its cells are cut short with an ellipsis (CutText), down to minCut.
type Table struct {
	Header []string
	Rows   [][]string
	Style  func(col int, cell string) string // an ANSI SGR code, or ""
	Cut    int
}

// Add appends a row.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// Print writes the table, no line wider than width (0: no limit) if the
// cut column can make it so.
func (t *Table) Print(w io.Writer, colour bool, width int) error {
	all := append([][]string{t.Header}, t.Rows...)
	widths := make([]int, len(t.Header))
	for _, r := range all {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	t.fit(widths, width)
	var b strings.Builder
	for ri, r := range all {
		for i, c := range r {
			if i == t.Cut && t.Cut > 0 {
				c = CutText(c, widths[i])
			}
			text := c
			if colour && ri > 0 && t.Style != nil {
				if code := t.Style(i, c); code != "" {
					text = "\x1b[" + code + "m" + c + "\x1b[0m"
				}
			} else if colour && ri == 0 {
				text = "\x1b[1m" + c + "\x1b[0m"
			}
			b.WriteString(text)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fit narrows the cut column so that a line is at most width wide, if it
// can (never under minCut); no width or no cut column changes nothing.
func (t *Table) fit(widths []int, width int) {
	if width <= 0 || t.Cut <= 0 || t.Cut >= len(widths) {
		return
	}
	line := 2 * (len(widths) - 1)
	for _, n := range widths {
		line += n
	}
	if line > width {
		widths[t.Cut] = max(widths[t.Cut]-(line-width), min(minCut, widths[t.Cut]))
	}
}

// minIDChars is the fewest characters of an id's time-sortable part (after
// "tsk_") that a table shows: enough to tell apart ids made a second apart.
const minIDChars = 8

// ShortIDs maps each of ids (all of one kind, "tsk_"-style prefix included)
// to its shortest start that no other of ids shares, and never shorter than
// its prefix and minIDChars characters. aipm resolves any unique start of an
// id (fsstore.Store.ResolveID), so a short id can be typed back.
func ShortIDs(ids []string) map[string]string {
	sorted := slices.Compact(slices.Sorted(slices.Values(ids)))
	out := make(map[string]string, len(sorted))
	for i, id := range sorted {
		n := strings.IndexByte(id, '_') + 1 + minIDChars
		if i > 0 {
			n = max(n, commonPrefix(id, sorted[i-1])+1)
		}
		if i+1 < len(sorted) {
			n = max(n, commonPrefix(id, sorted[i+1])+1)
		}
		out[id] = id[:min(n, len(id))]
	}
	return out
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// Shortener returns how tables show the ids of the given collections
// (storage.Tasks, ...): ShortIDs among all the project's ids of each kind
// (ids lists them: fsstore.Store.IDs).
// An id the project does not hold (a task removed since) stays whole.
func Shortener(ids func(collection string) ([]string, error), collections ...string) (func(string) string, error) {
	short := map[string]string{}
	for _, c := range collections {
		all, err := ids(c)
		if err != nil {
			return nil, err
		}
		for id, s := range ShortIDs(all) {
			short[id] = s
		}
	}
	return func(id string) string {
		if s, ok := short[id]; ok {
			return s
		}
		return id
	}, nil
}

// maxAge is the oldest time a table shows as an age; older ones are dates.
const maxAge = 7 * 24 * time.Hour

// Age is how a table shows a time: how long before now it was, in whole
// seconds, minutes, hours or days ("45s ago", "12m ago", "5h ago", "6d ago");
// from maxAge on, its date in loc. A time after now (another clock) is
// "0s ago"; the zero time is "-".
func Age(t, now time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "-"
	}
	d := max(now.Sub(t), 0)
	switch {
	case d >= maxAge:
		return t.In(loc).Format(time.DateOnly)
	case d >= 24*time.Hour:
		return fmt.Sprintf("%dd ago", d/(24*time.Hour))
	case d >= time.Hour:
		return fmt.Sprintf("%dh ago", d/time.Hour)
	case d >= time.Minute:
		return fmt.Sprintf("%dm ago", d/time.Minute)
	}
	return fmt.Sprintf("%ds ago", d/time.Second)
}

// ByteSize is n bytes for a person: 512 B, 3.4 KiB, 12.0 MiB.
func ByteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// minCut is the narrowest a table's cut column gets, whatever the width.
const minCut = 12

// CutText cuts s to at most n characters, the last of them an ellipsis
// (with no space before it).
func CutText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:max(n-1, 0)]), " ") + "…"
}

// Width is how wide a table's lines may be: $COLUMNS when it is a
// positive number, else the terminal's width when w is a terminal, else no
// limit (0), so that a pipe or a file gets every character.
func Width(getenv func(string) string, w io.Writer) int {
	if n, err := strconv.Atoi(getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	f, ok := w.(*os.File)
	if !ok || !IsTerminal(w) {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 {
		return 0
	}
	return int(ws.Col)
}

// IsTerminal says whether w is a character device (a terminal).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Visible escapes control characters other than newline and tab, so text
// from a file cannot drive the terminal.
func Visible(s string) string {
	isControl := func(r rune) bool {
		return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r < 0xa0)
	}
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Dash is how a table shows an empty cell: "-".
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// OneLine folds runs of white space (newlines included) into one space.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
