package fsstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"aipm/fsstore/internal/storage"
)

// The status a new task starts in, as CreateTask checks it: the same rule
// the CLI asks before it opens the project (CheckStartStatus).
func TestCreateTaskStartStatus(t *testing.T) {
	s, cfg := leadAndCoder(t)
	for _, tc := range []struct {
		name string
		in   NewTask
		want string // "" = created, else a substring of the error
	}{
		{"none is todo", NewTask{}, ""},
		{"backlog", NewTask{Status: StatusBacklog}, ""},
		{"todo", NewTask{Status: StatusTodo}, ""},
		{"in progress, assigned", NewTask{Status: StatusInProgress, Assignee: "coder"}, ""},
		{"waiting for approval, planned", NewTask{Status: StatusBacklog, NeedsApproval: true}, ""},
		{"in progress, unassigned", NewTask{Status: StatusInProgress}, "a task in progress needs an assignee: pass one"},
		{"in progress, waiting for approval", NewTask{Status: StatusInProgress, Assignee: "coder", NeedsApproval: true},
			"a task that waits for approval cannot start in progress: create it as backlog or todo, and start it once a human approves it"},
		{"blocked", NewTask{Status: StatusBlocked}, "a new task cannot start as blocked: use backlog, todo or in_progress, then change its status"},
		{"done", NewTask{Status: StatusDone}, "a new task cannot start as done: use backlog, todo or in_progress, then change its status"},
		{"cancelled", NewTask{Status: StatusCancelled}, "a new task cannot start as cancelled: use backlog, todo or in_progress, then change its status"},
		{"unknown", NewTask{Status: "doing"}, `status "doing" is invalid: use one of`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Title = tc.name
			task, err := s.CreateTask(context.Background(), cfg, in)
			if tc.want == "" {
				if err != nil || task.Status != cmp.Or(in.Status, StatusTodo) {
					t.Fatalf("CreateTask: %+v, %v; want it created as %s", task, err, cmp.Or(in.Status, StatusTodo))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CreateTask: %v, want %q", err, tc.want)
			}
			if _, err := s.Task(task.ID); task.ID != "" && !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("a refused task was written: %+v", task)
			}
		})
	}
}

// Every status of the workflow is either one a new task may start in, or
// refused as a start; a refusal names the ones it may start in.
func TestCheckStartStatus(t *testing.T) {
	for _, status := range Statuses {
		err := CheckStartStatus(status)
		if slices.Contains(StartStatuses, status) != (err == nil) {
			t.Errorf("CheckStartStatus(%s): %v", status, err)
		}
		var ce *storage.CodeError
		if err != nil && (!errors.As(err, &ce) || ce.Code != storage.CodeInvalidStatus) {
			t.Errorf("CheckStartStatus(%s): %v, want the code %s", status, err, storage.CodeInvalidStatus)
		}
	}
}

func TestStopsWork(t *testing.T) {
	for _, status := range Statuses {
		want := status == StatusBlocked || status == StatusCancelled
		if got := StopsWork(status); got != want {
			t.Errorf("StopsWork(%s) = %v, want %v", status, got, want)
		}
		kind := map[string]string{StatusBlocked: interruptPause, StatusCancelled: interruptCancel}[status]
		if got := interruptKind(status); got != kind {
			t.Errorf("interruptKind(%s) = %q, want %q", status, got, kind)
		}
	}
}

// AdjustStatuses are exactly the statuses update_task_from_chat can set
// on some planned task, asked by a sender with authority over it: tried
// for every status from every planned one.
func TestAdjustStatusesAreWhatChatCanSet(t *testing.T) {
	s, cfg := leadAndCoder(t)
	ctx := context.Background()
	var set []string
	for _, to := range Statuses {
		for _, from := range plannedStatuses {
			task, err := s.CreateTask(ctx, cfg, NewTask{Title: from + " to " + to, Assignee: "coder", Requester: "lead", Status: from})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.FromChat().UpdateTask(ctx, cfg, "coder", "lead", task.ID, ChatAdjust{Status: to}); err == nil {
				set = append(set, to)
				break
			}
		}
	}
	if !slices.Equal(set, AdjustStatuses) {
		t.Fatalf("@@タスク調整 can set %v; AdjustStatuses says %v", set, AdjustStatuses)
	}
	if want := []string{StatusBacklog, StatusTodo, StatusInProgress, StatusCancelled}; !slices.Equal(AdjustStatuses, want) {
		t.Fatalf("AdjustStatuses = %v, want %v", AdjustStatuses, want)
	}
}
