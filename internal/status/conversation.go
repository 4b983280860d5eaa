package status

import (
	"fmt"
	"io"
	"strings"
	"time"

	"aipm/fsstore"
	"aipm/internal/table"
)

// PrintConversation writes a conversation as aipm conversation show prints
// it before its messages: each non-empty field a line, then the history of
// its states; times shown by timeText.
func PrintConversation(w io.Writer, c fsstore.Conversation, timeText func(time.Time) string) error {
	ended := ""
	if !c.EndedAt.IsZero() {
		ended = timeText(c.EndedAt)
	}
	fields := []struct{ label, value string }{
		{"id", c.ID},
		{"state", c.State},
		{"initiator", c.Initiator},
		{"participant", strings.Join(c.Others(c.Initiator), ", ")},
		{"purpose", c.Purpose},
		{"turns", fmt.Sprintf("%d of %d", c.Turns, c.MaxTurns)},
		{"task", c.TaskID},
		{"created", timeText(c.CreatedAt)},
		{"ended", ended},
		{"end reason", c.EndReason},
		{"ended by", c.EndedBy},
	}
	var b strings.Builder
	for _, f := range fields {
		if f.value != "" {
			fmt.Fprintf(&b, "%-12s %s\n", f.label+":", table.Visible(f.value))
		}
	}
	b.WriteString("history:\n")
	for _, h := range c.History {
		line := fmt.Sprintf("  %s  %s by %s", timeText(h.At), h.State, h.By)
		if h.Reason != "" {
			line += " (" + h.Reason + ")"
		}
		fmt.Fprintln(&b, table.Visible(line))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
