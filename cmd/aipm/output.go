package main

import (
	"fmt"
	"strings"
	"time"

	"aipm/fsstore"
	"aipm/internal/table"
	"aipm/internal/transcript"
)

// writeJSON and writeJSONLine are the one JSON format of every command
// (transcript.WriteJSON, transcript.WriteJSONLine).
var (
	writeJSON     = transcript.WriteJSON
	writeJSONLine = transcript.WriteJSONLine
)

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

// printer prints messages and notifications as this command shows them.
func (e *env) printer() *transcript.Printer {
	return &transcript.Printer{Stdout: e.stdout, Stderr: e.stderr, UTC: e.utc}
}

// timeText renders t in local time, or UTC with --utc; zero is "".
func (e *env) timeText(t time.Time) string { return e.printer().TimeText(t) }

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

// visible is table.Visible: text from a file cannot drive the terminal.
func visible(s string) string { return table.Visible(s) }
