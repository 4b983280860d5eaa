package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestCheckTransition(t *testing.T) {
	for _, tc := range []struct {
		from, to, approval string
		want               string // "" = allowed, else a substring of the error
	}{
		{StatusTodo, StatusInProgress, ApprovalApproved, ""},
		{StatusBacklog, StatusInProgress, ApprovalApproved, ""},
		{StatusInProgress, StatusDone, ApprovalApproved, ""},
		{StatusInProgress, StatusBlocked, ApprovalApproved, ""},
		{StatusBlocked, StatusInProgress, ApprovalApproved, ""},
		{StatusDone, StatusTodo, ApprovalApproved, ""},
		{StatusCancelled, StatusTodo, ApprovalApproved, ""},
		{StatusInProgress, StatusBacklog, ApprovalApproved, "cannot go from in_progress to backlog"},
		{StatusDone, StatusInProgress, ApprovalApproved, "cannot go from done to in_progress"},
		{StatusTodo, StatusTodo, ApprovalApproved, "already todo"},
		{StatusTodo, "doing", ApprovalApproved, `status "doing" is invalid`},
		{StatusTodo, StatusInProgress, ApprovalPending, "pending_approval and cannot start"},
	} {
		err := checkTransition(Task{ID: "tsk_x", Status: tc.from, ApprovalStatus: tc.approval}, tc.to)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s -> %s (%s): %v, want %q", tc.from, tc.to, tc.approval, err, tc.want)
		}
	}
}

func TestInterrupts(t *testing.T) {
	inProgress := Task{Status: StatusInProgress, Assignee: "coder"}
	for _, tc := range []struct {
		to, by string
		want   bool
	}{
		{StatusBlocked, "lead", true},
		{StatusCancelled, "cli", true},
		{StatusBlocked, "coder", false}, // the assignee itself
		{StatusDone, "lead", false},
		{StatusTodo, "lead", false},
	} {
		after := inProgress
		after.Status = tc.to
		if got := Interrupts(inProgress, after, tc.by); got != tc.want {
			t.Errorf("in_progress -> %s by %s: %v, want %v", tc.to, tc.by, got, tc.want)
		}
	}
	if Interrupts(Task{Status: StatusTodo, Assignee: "coder"}, Task{Status: StatusBlocked, Assignee: "coder"}, "lead") {
		t.Error("a task that was not in progress interrupted")
	}
}

func TestUpdateTaskWritesOneInterrupt(t *testing.T) {
	s, cfg := leadAndCoder(t)
	ctx := context.Background()
	task, err := s.CreateTask(ctx, cfg, NewTask{Title: "t", Assignee: "coder", Status: StatusInProgress})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateTask(ctx, cfg, task.ID, "lead", TaskChange{Status: StatusBlocked, Reason: "wait"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateTask(ctx, cfg, task.ID, "lead", TaskChange{Status: StatusCancelled}); err != nil {
		t.Fatal(err) // blocked -> cancelled: the task was not in progress, no second interrupt
	}
	ses := Session{ID: storage.NewID(storage.PrefixSession), Agent: "coder", Purpose: storage.PurposeTask, TaskID: task.ID}
	ns, _, err := s.SessionNotifications(ctx, ses, true, 0)
	if err != nil || len(ns) != 1 || ns[0].Type != storage.NotifyInterrupt || ns[0].TaskID != task.ID || !strings.Contains(ns[0].Message, "wait") {
		t.Fatalf("notifications %+v, err %v; want one interrupt", ns, err)
	}
}

// A human's editor saving a task between aipm's read and its write: aipm
// notices (compare-and-swap), re-reads and re-applies, so both changes are
// kept; and keys aipm does not know survive every rewrite.
func TestUpdateTaskRacingAnEditor(t *testing.T) {
	s, cfg := leadAndCoder(t)
	ctx := context.Background()
	task, err := s.CreateTask(ctx, cfg, NewTask{Title: "first title", Assignee: "coder"})
	if err != nil {
		t.Fatal(err)
	}
	path, _ := s.files.DocPath(storage.Tasks, task.ID)
	edit := func(change func(m map[string]any)) {
		data, _ := os.ReadFile(path)
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		change(m)
		out, _ := json.MarshalIndent(m, "", "  ")
		os.WriteFile(path+".swp", out, 0o644)
		if err := os.Rename(path+".swp", path); err != nil { // as vim saves, without any lock
			t.Fatal(err)
		}
	}
	edit(func(m map[string]any) { m["x-estimate"] = map[string]any{"days": 3.0} })

	saves := 0
	s.setBeforeWrite(func(string) {
		if saves < 2 { // two saves in a row: the second re-read is raced too
			saves++
			edit(func(m map[string]any) { m["title"] = "edited title"; m["x-owner-note"] = "mine" })
		}
	})
	defer s.setBeforeWrite(nil)
	got, err := s.UpdateTask(ctx, cfg, task.ID, "lead", TaskChange{Status: StatusBacklog})
	if err != nil {
		t.Fatal(err)
	}
	if saves != 2 {
		t.Fatalf("the editor saved %d times, want 2", saves)
	}
	data, _ := os.ReadFile(path)
	var m map[string]any
	json.Unmarshal(data, &m)
	if m["status"] != StatusBacklog || m["title"] != "edited title" || got.Title != "edited title" {
		t.Fatalf("a change was lost: status %v, title %v\n%s", m["status"], m["title"], data)
	}
	if m["x-owner-note"] != "mine" || m["x-estimate"] == nil {
		t.Fatalf("unknown keys were dropped:\n%s", data)
	}
	if !strings.HasSuffix(string(data), "}\n") || strings.Index(string(data), `"x-estimate"`) < strings.Index(string(data), `"updatedAt"`) {
		t.Fatalf("unknown keys should follow aipm's own, indented:\n%s", data)
	}

	// An editor that never stops saving: aipm refuses rather than overwrite.
	s.setBeforeWrite(func(string) { edit(func(m map[string]any) { m["title"] = "again" }) })
	if _, err := s.UpdateTask(ctx, cfg, task.ID, "lead", TaskChange{Status: StatusTodo}); err == nil || !strings.Contains(err.Error(), "changed by someone else") {
		t.Fatalf("UpdateTask under a saving editor: %v", err)
	}
	if cur, _ := s.Task(task.ID); cur.Status != StatusBacklog || cur.Title != "again" {
		t.Fatalf("after the refusal: %+v", cur)
	}
}
