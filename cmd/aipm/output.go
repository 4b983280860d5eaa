package main

import (
	"fmt"
	"time"

	"aipm/internal/table"
	"aipm/internal/transcript"
)

// writeJSON and writeJSONLine are the one JSON format of every command
// (transcript.WriteJSON, transcript.WriteJSONLine).
var (
	writeJSON     = transcript.WriteJSON
	writeJSONLine = transcript.WriteJSONLine
)

// printer prints messages and notifications as this command shows them.
func (e *env) printer() *transcript.Printer {
	return &transcript.Printer{Stdout: e.stdout, Stderr: e.stderr, UTC: e.utc}
}

// timeText renders t in local time, or UTC with --utc; zero is "".
func (e *env) timeText(t time.Time) string { return e.printer().TimeText(t) }

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// visible is table.Visible: text from a file cannot drive the terminal.
func visible(s string) string { return table.Visible(s) }
