package bench

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
