package status

import (
	"strings"
	"testing"
	"time"

	"aipm/fsstore"
)

// TestPrintTaskDependencies: task show's lines of what a task waits for,
// what waits for it, its group and who started it; each only when it says
// something.
func TestPrintTaskDependencies(t *testing.T) {
	waits := []fsstore.Wait{{TaskID: "tsk_a", Status: fsstore.StatusTodo}, {TaskID: "tsk_b", Status: fsstore.StatusInProgress, Subtask: true}, {TaskID: "tsk_c"}}
	for _, tc := range []struct {
		name      string
		d         TaskDetail
		want, not []string
	}{
		{name: "waiting", d: TaskDetail{Task: fsstore.Task{Status: fsstore.StatusTodo, BlockedBy: []string{"tsk_a", "tsk_c"}}, TaskDeps: fsstore.TaskDeps{Waits: waits, WaitedBy: []string{"tsk_d", "tsk_e"}}},
			want: []string{"blockers:          tsk_a, tsk_c\n", "waits for:         tsk_a (todo), subtask tsk_b (in_progress), tsk_c (does not exist)\n", "waited on by:      tsk_d, tsk_e\n"}},
		{name: "ready", d: TaskDetail{Task: fsstore.Task{Status: fsstore.StatusTodo}, TaskDeps: fsstore.TaskDeps{Ready: true}},
			want: []string{"waits for:         nothing (ready)\n"}, not: []string{"blockers:", "waited on by:"}},
		{name: "done: nothing to wait for", d: TaskDetail{Task: fsstore.Task{Status: fsstore.StatusDone, BlockedBy: []string{"tsk_a"}}, TaskDeps: fsstore.TaskDeps{Waits: waits}},
			want: []string{"blockers:          tsk_a\n"}, not: []string{"waits for:"}},
		{name: "neither waiting nor ready", d: TaskDetail{Task: fsstore.Task{Status: fsstore.StatusBacklog}},
			not: []string{"waits for:"}},
		{name: "a group's queue", d: TaskDetail{Task: fsstore.Task{Status: fsstore.StatusTodo, Group: "testers"}},
			want: []string{"group:             testers (its AI agents may claim it)\n"}},
		{name: "a group, assigned", d: TaskDetail{Task: fsstore.Task{Status: fsstore.StatusTodo, Group: "testers", Assignee: "coder"}},
			want: []string{"group:             testers\n"}, not: []string{"may claim"}},
		{name: "started when ready", d: TaskDetail{Task: fsstore.Task{Status: fsstore.StatusInProgress, StartedReady: true, StatusChangedBy: fsstore.SystemSender}},
			want: []string{"status changed by: system (started when what it waited for was done)\n"}},
		{name: "moved by hand since", d: TaskDetail{Task: fsstore.Task{Status: fsstore.StatusBlocked, StartedReady: true, StatusChangedBy: "lead"}},
			want: []string{"status changed by: lead\n"}, not: []string{"started when"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := PrintTask(&b, tc.d, func(time.Time) string { return "" }); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("no %q in\n%s", w, b.String())
				}
			}
			for _, n := range tc.not {
				if strings.Contains(b.String(), n) {
					t.Errorf("%q in\n%s", n, b.String())
				}
			}
		})
	}
}

// TestTaskTableWaits: --waiting's last column, ids shortened; without
// waits, no such column.
func TestTaskTableWaits(t *testing.T) {
	tasks := []fsstore.Task{{ID: "tsk_long1", Status: fsstore.StatusTodo, Priority: "normal", Title: "B"}}
	short := func(id string) string { return strings.TrimSuffix(id, "long1") + "1" }
	age := func(time.Time) string { return "1s ago" }
	var with, without strings.Builder
	waits := map[string][]fsstore.Wait{"tsk_long1": {{TaskID: "tsk_long1", Status: fsstore.StatusBlocked}}}
	if err := TaskTable(tasks, short, age, waits).Print(&with, false, 0); err != nil {
		t.Fatal(err)
	}
	if err := TaskTable(tasks, short, age, nil).Print(&without, false, 0); err != nil {
		t.Fatal(err)
	}
	if want := "tsk_1  todo    normal    -         1s ago   B      tsk_1 (blocked)\n"; !strings.HasSuffix(with.String(), want) || !strings.Contains(with.String(), "WAITS FOR") {
		t.Errorf("with waits:\n%s\nwant a WAITS FOR column ending in %q", with.String(), want)
	}
	if strings.Contains(without.String(), "WAITS FOR") {
		t.Errorf("without waits:\n%s\nwant no WAITS FOR column", without.String())
	}
}
