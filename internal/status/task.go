package status

import (
	"fmt"
	"io"
	"strings"
	"time"

	"aipm/fsstore"
	"aipm/internal/table"
)

// TaskTable is the one table of tasks (aipm task list): short shows task
// ids (table.Shortener), age a time. With waits (task list --waiting), a
// last column says what each task waits for.
func TaskTable(tasks []fsstore.Task, short func(string) string, age func(time.Time) string, waits map[string][]fsstore.Wait) *table.Table {
	t := &table.Table{Header: []string{"ID", "STATUS", "PRIORITY", "ASSIGNEE", "UPDATED", "TITLE"}, Cut: 5}
	if waits != nil {
		t.Header = append(t.Header, "WAITS FOR")
	}
	for _, task := range tasks {
		row := []string{short(task.ID), statusText(task), task.Priority, table.Dash(task.Assignee), age(task.UpdatedAt), table.Visible(table.OneLine(task.Title))}
		if waits != nil {
			row = append(row, table.Visible(WaitsText(waits[task.ID], short)))
		}
		t.Add(row...)
	}
	t.Style = func(col int, cell string) string {
		if col == 1 {
			return TaskStyle(cell)
		}
		return ""
	}
	return t
}

// WaitsText is fsstore.WaitsText with the ids shown by short.
func WaitsText(ws []fsstore.Wait, short func(string) string) string {
	shown := make([]fsstore.Wait, len(ws))
	for i, w := range ws {
		shown[i] = w
		shown[i].TaskID = short(w.TaskID)
	}
	return fsstore.WaitsText(shown)
}

// statusText is the status (statusNote), with the approval state when it
// is not approved.
func statusText(t fsstore.Task) string {
	if t.ApprovalStatus == fsstore.ApprovalApproved || t.ApprovalStatus == "" {
		return statusNote(t)
	}
	return statusNote(t) + " (" + t.ApprovalStatus + ")"
}

// statusNote is the status, saying when the file holds one aipm does not
// take: a status that is not one, or a hand edit it does not allow.
func statusNote(t fsstore.Task) string {
	switch {
	case fsstore.CheckStatus(t.Status) != nil:
		return t.Status + " (invalid: not a status, see aipm doctor)"
	case t.HandStatus != "":
		return t.Status + " (" + t.HandStatus + " by hand: not allowed, see aipm doctor)"
	}
	return t.Status
}

// TaskDetail is a task as aipm task show prints it: its document, and what
// the task index says of it (fsstore.Store.TaskDeps) and the live
// leases (those taken for it are shown).
type TaskDetail struct {
	Task fsstore.Task
	fsstore.TaskDeps
	Leases []fsstore.Lease
}

// PrintTask writes every non-empty field of d's task, a line each (the
// lines of a multi-line value in the value's column), times shown by
// timeText.
func PrintTask(w io.Writer, d TaskDetail, timeText func(time.Time) string) error {
	t := d.Task
	fields := []struct{ label, value string }{
		{"id", t.ID},
		{"title", t.Title},
		{"status", statusNote(t)},
		{"approval", t.ApprovalStatus},
		{"priority", t.Priority},
		{"assignee", t.Assignee},
		{"group", groupText(t)},
		{"parent", t.ParentID},
		{"blockers", strings.Join(t.BlockedBy, ", ")},
		{"waits for", waitsText(d)},
		{"waited on by", strings.Join(d.WaitedBy, ", ")},
		{"requester", t.Requester},
		{"status changed by", statusChangedBy(t)},
		{"status changed at", timeText(t.StatusChangedAt)},
		{"blocked reason", t.BlockedReason},
		{"result", t.Result},
		{"summary", t.Summary},
		{"created", timeText(t.CreatedAt)},
		{"updated", timeText(t.UpdatedAt)},
		{"description", t.Description},
		{"pending change", pendingChangeText(t)},
		{"leases", leasesText(d.Leases, t.ID, timeText)},
	}
	width := len("status changed by:")
	var b strings.Builder
	for _, f := range fields {
		if f.value == "" {
			continue
		}
		value := strings.ReplaceAll(table.Visible(f.value), "\n", "\n"+strings.Repeat(" ", width+1))
		fmt.Fprintf(&b, "%-*s %s\n", width, f.label+":", value)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// groupText is the group whose AI agents may claim the task, saying so
// while nobody is assigned ("" without one).
func groupText(t fsstore.Task) string {
	if t.Group == "" || t.Assignee != "" {
		return t.Group
	}
	return t.Group + " (its AI agents may claim it)"
}

// waitsText is what an open task waits for, "nothing (ready)" for a ready
// one, else "".
func waitsText(d TaskDetail) string {
	switch {
	case d.Ready:
		return "nothing (ready)"
	case fsstore.StatusOpen(d.Task.Status):
		return fsstore.WaitsText(d.Waits)
	}
	return ""
}

// statusChangedBy is who changed the status last, saying when aipm set it
// in progress by itself once what it waited for was done.
func statusChangedBy(t fsstore.Task) string {
	if t.StartedReady && t.StatusChangedBy == fsstore.SystemSender {
		return t.StatusChangedBy + " (started when what it waited for was done)"
	}
	return t.StatusChangedBy
}

// leasesText lists the live leases of leases taken for task id, one a line
// ("" if none).
func leasesText(leases []fsstore.Lease, id string, timeText func(time.Time) string) string {
	var lines []string
	for _, l := range leases {
		if l.TaskID == id {
			lines = append(lines, fmt.Sprintf("%s holds %s (%s) until %s", l.Holder, strings.Join(l.Paths, ", "), LeaseMode(l), timeText(l.ExpiresAt)))
		}
	}
	return strings.Join(lines, "\n")
}

// pendingChangeText says what a change asked through chat that waits for
// approval asks, who asked, and how to decide it ("" if none).
func pendingChangeText(t fsstore.Task) string {
	r := t.PendingChange
	if r == nil {
		return ""
	}
	return fmt.Sprintf("%s asked with %s to %s this task; decide with aipm task approve %s or aipm task reject %s", r.By, r.Marker, r.Describe(), t.ID, t.ID)
}
