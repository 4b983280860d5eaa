package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"aipm/fsstore"
	"aipm/internal/status"
)

type taskShowOptions struct {
	e    *env
	ID   string
	JSON bool
}

func newCmdTaskShow(e *env, runF func(*taskShowOptions) error) *cobra.Command {
	o := &taskShowOptions{e: e}
	c := &cobra.Command{
		Use:     "show ID",
		Short:   "Show every field of a task",
		Long:    "Show every non-empty field of a task; --json prints its document as stored. Times are local (or UTC with --utc), with their offset.",
		Example: "  aipm task show 01KAQ7\n  aipm task show tsk_01KAQ7ZB3C --json",
		Args:    argsExactly(1, "exactly one task id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID = args[0]
			if runF != nil {
				return runF(o)
			}
			return taskShowRun(o)
		},
	}
	c.Flags().BoolVar(&o.JSON, "json", false, "print the task's JSON document")
	c.ValidArgsFunction = e.completeTasks
	return c
}

func taskShowRun(o *taskShowOptions) error {
	store, _, err := o.e.open()
	if err != nil {
		return err
	}
	id, err := taskID(store, o.ID)
	if err != nil {
		return err
	}
	t, err := store.Task(id)
	if err != nil {
		return err
	}
	if o.JSON {
		return writeJSON(o.e.stdout, t)
	}
	e := o.e
	leases, err := taskLeases(e, store, t.ID)
	if err != nil {
		return err
	}
	fields := []struct{ label, value string }{
		{"id", t.ID},
		{"title", t.Title},
		{"status", statusNote(t)},
		{"approval", t.ApprovalStatus},
		{"priority", t.Priority},
		{"assignee", t.Assignee},
		{"parent", t.ParentID},
		{"requester", t.Requester},
		{"status changed by", t.StatusChangedBy},
		{"status changed at", e.timeText(t.StatusChangedAt)},
		{"blocked reason", t.BlockedReason},
		{"result", t.Result},
		{"summary", t.Summary},
		{"created", e.timeText(t.CreatedAt)},
		{"updated", e.timeText(t.UpdatedAt)},
		{"description", t.Description},
		{"pending change", pendingChangeText(t)},
		{"leases", leases},
	}
	width := len("status changed by:")
	var b strings.Builder
	for _, f := range fields {
		if f.value == "" {
			continue
		}
		// continuation lines of a multi-line value stay in the value column
		value := strings.ReplaceAll(visible(f.value), "\n", "\n"+strings.Repeat(" ", width+1))
		fmt.Fprintf(&b, "%-*s %s\n", width, f.label+":", value)
	}
	_, err = fmt.Fprint(e.stdout, b.String())
	return err
}

// taskLeases lists the live leases taken for task id, one a line ("" if
// none).
func taskLeases(e *env, store *fsstore.Store, id string) (string, error) {
	leases, err := store.Leases()
	if err != nil {
		return "", fmt.Errorf("leases of %s: %w", id, err)
	}
	var lines []string
	for _, l := range leases {
		if l.TaskID == id {
			lines = append(lines, fmt.Sprintf("%s holds %s (%s) until %s", l.Holder, strings.Join(l.Paths, ", "), status.LeaseMode(l), e.timeText(l.ExpiresAt)))
		}
	}
	return strings.Join(lines, "\n"), nil
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

// taskJSON is what task commands that change a task print with --json.
type taskJSON struct {
	fsstore.Task
	Interrupted string `json:"interrupted,omitempty"`
	Notified    string `json:"notified,omitempty"`
}
