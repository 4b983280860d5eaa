package bench

import (
	"aipm/fsstore"
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

	aipmValues, floorValues values  // the measured numbers behind aipm and floor
	checks                  []check // the target as numbers (judged); none for a reference or a row not measured
	err                     string  // why the row was not measured: its measurement failed or passed its deadline
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

// JSON is the row as --json prints it: the table's cells as text, and
// the numbers behind them: aipm_values and floor_values (each named with
// its unit, "p99_ms"), the checks of the target (value op limit in unit,
// and whether it holds: the row is met when all do), and error, why a
// row was not measured ("" when it was).
func (r Row) JSON() map[string]any {
	checks := make([]checkJSON, 0, len(r.checks))
	for _, c := range r.checks {
		checks = append(checks, c.json())
	}
	orEmpty := func(v values) values {
		if v == nil {
			return values{}
		}
		return v
	}
	return map[string]any{"id": r.id, "what": r.what, "aipm": r.aipm, "floor": r.floor, "compared": r.compared, "target": r.target, "met": r.met, "client_cpu": r.cpu,
		"aipm_values": orEmpty(r.aipmValues), "floor_values": orEmpty(r.floorValues), "checks": checks, "error": r.err}
}

// WriteJSON writes rows as --json prints them: an array of Row.JSON.
func WriteJSON(w io.Writer, rows []Row) error {
	out := make([]map[string]any, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.JSON())
	}
	data, err := fsstore.EncodeDoc(out)
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
