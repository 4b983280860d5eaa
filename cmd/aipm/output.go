package main

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"aipm/fsstore"
)

// writeJSON is the one --json printer: v as an indented JSON document (the
// same encoding as the files under .ai-pm/); a nil list prints [].
func writeJSON(w io.Writer, v any) error {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice && rv.IsNil() {
		_, err := io.WriteString(w, "[]\n")
		return err
	}
	data, err := fsstore.EncodeDoc(v)
	if err != nil {
		return fmt.Errorf("encode JSON: %w", err)
	}
	_, err = w.Write(data)
	return err
}

// writeJSONLine prints v as one compact line: the form of a stream (log
// --follow --json), where a list could never be closed.
func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// table is the one table printer: columns aligned to their widest cell,
// two spaces apart; style, if set, colours a cell after padding (so colour
// never shifts a column) when colour is on. cut, if above 0, is the column
// of free text (a title) that gives way when a line would be wider than
// width: its cells are cut short with an ellipsis (cutText), down to minCut.
type table struct {
	header []string
	rows   [][]string
	style  func(col int, cell string) string // an ANSI SGR code, or ""
	cut    int
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// print writes the table, no line wider than width (0: no limit) if the
// cut column can make it so.
func (t *table) print(w io.Writer, colour bool, width int) error {
	all := append([][]string{t.header}, t.rows...)
	widths := make([]int, len(t.header))
	for _, r := range all {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	t.fit(widths, width)
	var b strings.Builder
	for ri, r := range all {
		for i, c := range r {
			if i == t.cut && t.cut > 0 {
				c = cutText(c, widths[i])
			}
			text := c
			if colour && ri > 0 && t.style != nil {
				if code := t.style(i, c); code != "" {
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
func (t *table) fit(widths []int, width int) {
	if width <= 0 || t.cut <= 0 || t.cut >= len(widths) {
		return
	}
	line := 2 * (len(widths) - 1)
	for _, n := range widths {
		line += n
	}
	if line > width {
		widths[t.cut] = max(widths[t.cut]-(line-width), min(minCut, widths[t.cut]))
	}
}

// statusStyle colours task statuses: what needs a person stands out.
func statusStyle(status string) string {
	switch strings.Fields(status + " ")[0] {
	case fsstore.StatusBlocked:
		return "31" // red
	case fsstore.StatusInProgress:
		return "33" // yellow
	case fsstore.StatusDone:
		return "32" // green
	case fsstore.StatusCancelled:
		return "2" // dim
	}
	return ""
}

// timeLayout is the one way a time is shown: local (or --utc) with its
// offset, to the second.
const timeLayout = "2006-01-02 15:04:05 -07:00"

// timeText renders t in local time, or UTC with --utc; zero is "".
func (e *env) timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	if e.utc {
		return t.UTC().Format(timeLayout)
	}
	return t.Local().Format(timeLayout)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// visible escapes control characters other than newline and tab, so text
// from a file cannot drive the terminal.
func visible(s string) string {
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
