package bench

import (
	"aipm/fsstore/storage"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Row is one measured target beside its floor.
type Row struct {
	id, what, aipm, floor, compared, target string
	met                                     bool
	cpu                                     string // the bench client's own CPU while it measured aipm
}

// Header names the columns of Row.Cells.
var Header = []string{"id", "what", "aipm", "raw floor", "compared", "target", "met", "client cpu"}

// Cells is the row as the table prints it, in Header's order.
func (r Row) Cells() []string {
	cpu := r.cpu
	if cpu == "" {
		cpu = "-"
	}
	return []string{r.id, r.what, r.aipm, r.floor, r.compared, r.target, map[bool]string{true: "yes", false: "NO"}[r.met], cpu}
}

// JSON is the row as --json prints it.
func (r Row) JSON() map[string]any {
	return map[string]any{"id": r.id, "what": r.what, "aipm": r.aipm, "floor": r.floor, "compared": r.compared, "target": r.target, "met": r.met, "client_cpu": r.cpu}
}

// WriteJSON writes rows as --json prints them: an array of Row.JSON.
func WriteJSON(w io.Writer, rows []Row) error {
	out := make([]map[string]any, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.JSON())
	}
	data, err := storage.EncodeDoc(out)
	if err != nil {
		return fmt.Errorf("encode JSON: %w", err)
	}
	_, err = w.Write(data)
	return err
}

// WriteTable writes rows as the table: Header, then each row's Cells.
func WriteTable(w io.Writer, rows []Row) error {
	// Columns aligned to their widest cell, two spaces apart, as aipm's
	// tables.
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(Header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r.Cells(), "\t"))
	}
	return tw.Flush()
}
