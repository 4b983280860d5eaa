package main

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

	"aipm/fsstore"
)

// How a table shows ids, times and long text: each rule has one home here,
// and every table uses it. --json and --quiet always print the whole values.

// minIDChars is the fewest characters of an id's time-sortable part (after
// "tsk_") that a table shows: enough to tell apart ids made a second apart.
const minIDChars = 8

// shortIDs maps each of ids (all of one kind, "tsk_"-style prefix included)
// to its shortest start that no other of ids shares, and never shorter than
// its prefix and minIDChars characters. aipm resolves any unique start of an
// id (fsstore.Store.ResolveID), so a short id can be typed back.
func shortIDs(ids []string) map[string]string {
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

// idShortener returns how tables show the ids of the given collections
// (fsstore.Tasks, ...): shortIDs among all the project's ids of each kind.
// An id the project does not hold (a task removed since) stays whole.
func idShortener(store *fsstore.Store, collections ...string) (func(string) string, error) {
	short := map[string]string{}
	for _, c := range collections {
		ids, err := store.IDs(c)
		if err != nil {
			return nil, err
		}
		for id, s := range shortIDs(ids) {
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

// ageText is how a table shows a time: how long before now it was, in whole
// seconds, minutes, hours or days ("45s ago", "12m ago", "5h ago", "6d ago");
// from maxAge on, its date in loc. A time after now (another clock) is
// "0s ago"; the zero time is "-".
func ageText(t, now time.Time, loc *time.Location) string {
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

// age shows t as ageText does, dates in local time or UTC with --utc.
func (e *env) age(t time.Time) string {
	loc := time.Local
	if e.utc {
		loc = time.UTC
	}
	return ageText(t, time.Now(), loc)
}

// minCut is the narrowest a table's cut column gets, whatever the width.
const minCut = 12

// cutText cuts s to at most n characters, the last of them an ellipsis
// (with no space before it).
func cutText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:max(n-1, 0)]), " ") + "…"
}

// outputWidth is how wide a table's lines may be: $COLUMNS when it is a
// positive number, else the terminal's width when w is a terminal, else no
// limit (0), so that a pipe or a file gets every character.
func outputWidth(getenv func(string) string, w io.Writer) int {
	if n, err := strconv.Atoi(getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	f, ok := w.(*os.File)
	if !ok || !isTerminal(w) {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 {
		return 0
	}
	return int(ws.Col)
}

// quietJSON refuses --quiet with --json: each says what to print.
func quietJSON(cmd string, quiet, json bool) error {
	if quiet && json {
		return usageError("%s: --quiet prints ids only and --json whole records: give one of them", cmd)
	}
	return nil
}

// printIDs is --quiet: the whole ids, one a line, for scripts.
func printIDs(w io.Writer, ids []string) error {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(id)
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
