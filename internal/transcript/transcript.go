// Package transcript is how the CLI prints what agents said and were
// told: a chat log as a transcript (with when each message was surfaced
// and read), the notifications of agents, each followed as files grow
// (log --follow, notifications --follow), and the one JSON and time
// format of every command's output.
package transcript

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"time"

	"aipm/fsstore"
	"aipm/internal/table"
)

// followRecheck is how long a --follow waits for a change before it
// re-reads anyway: a safety net for an event fsnotify lost.
const followRecheck = 3 * time.Second

// WriteJSON is the one --json printer: v as an indented JSON document (the
// same encoding as the files under .ai-pm/); a nil list prints [].
func WriteJSON(w io.Writer, v any) error {
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

// WriteJSONLine prints v as one compact line: the form of a stream (log
// --follow --json), where a list could never be closed.
func WriteJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// timeLayout is the one way a time is shown: local (or UTC) with its
// offset, to the second.
const timeLayout = "2006-01-02 15:04:05 -07:00"

// Printer prints messages and notifications on Stdout, warnings on
// Stderr, times in local time or, with UTC, in UTC.
type Printer struct {
	Stdout, Stderr io.Writer
	UTC            bool
	// skipped are the lines already warned of: a follow reads a file's
	// unfinished last line again at every wake until it is finished, and
	// says it once.
	skipped map[string]bool
}

// Skipped warns, once, of a line a reader passed over: invalid, or an
// unfinished last line.
func (p *Printer) Skipped(le *fsstore.LineError) {
	if p.skipped == nil {
		p.skipped = map[string]bool{}
	}
	if text := le.Error(); !p.skipped[text] {
		p.skipped[text] = true
		fmt.Fprintf(p.Stderr, "aipm: warning: skipped %s\n", text)
	}
}

// TimeText renders t in local time, or UTC with p.UTC; zero is "".
func (p *Printer) TimeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	if p.UTC {
		return t.UTC().Format(timeLayout)
	}
	return t.Local().Format(timeLayout)
}

// IsDir says whether path is a directory.
func IsDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// writeSeen prints, under a received message, when it was surfaced to
// the agent's sessions (and how) and when read; nothing before either.
func (p *Printer) writeSeen(who string, s fsstore.Seen) {
	var parts []string
	if !s.SurfacedAt.IsZero() {
		parts = append(parts, fmt.Sprintf("surfaced %s (%s)", p.TimeText(s.SurfacedAt), table.Visible(s.SurfacedVia)))
	}
	if !s.ReadAt.IsZero() {
		parts = append(parts, fmt.Sprintf("read %s (%s)", p.TimeText(s.ReadAt), table.Visible(s.ReadVia)))
	}
	if len(parts) > 0 {
		fmt.Fprintf(p.Stdout, "    ↳ %s%s\n", who, strings.Join(parts, ", "))
	}
}

// Message prints "TIME  WHO: TEXT", continuation lines of the text
// indented under WHO, "[system] " before WHO for what aipm wrote. Control
// characters are shown escaped, so a message cannot drive the terminal.
func (p *Printer) Message(m fsstore.Message, who string) {
	stamp := m.CreatedAt
	if t, err := time.Parse(time.RFC3339Nano, m.CreatedAt); err == nil {
		stamp = p.TimeText(t)
	}
	if m.Kind == fsstore.KindSystem || m.SenderID == fsstore.SystemSender {
		who = "[system] " + who
	}
	if m.ConversationID != "" {
		who += " [" + m.ConversationID + "]"
	}
	indent := "\n" + strings.Repeat(" ", len(stamp)+2)
	text := strings.ReplaceAll(table.Visible(strings.TrimRight(m.Content, "\n")), "\n", indent)
	fmt.Fprintf(p.Stdout, "%s  %s: %s\n", table.Visible(stamp), table.Visible(who), text)
}
