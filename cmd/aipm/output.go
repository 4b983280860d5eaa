package main

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"

	"aipm/fsstore"
	"aipm/fsstore/storage"
)

// writeJSON is the one --json printer: v as an indented JSON document (the
// same encoding as the files under .ai-pm/); a nil list prints [].
func writeJSON(w io.Writer, v any) error {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice && rv.IsNil() {
		_, err := io.WriteString(w, "[]\n")
		return err
	}
	data, err := storage.EncodeDoc(v)
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
