package fsstore

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// A human's editor saving a task between aipm's read and its write: aipm
// notices (compare-and-swap), re-reads and re-applies, so both changes are
// kept; and keys aipm does not know survive every rewrite.
func TestUpdateTaskRacingAnEditor(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	for _, a := range []NewAgent{{ID: "lead", Type: AgentHuman}, {ID: "coder", Type: AgentAI}} {
		if _, err := s.AddAgent(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	cfg, _ := s.LoadConfig()
	task, err := s.CreateTask(ctx, cfg, NewTask{Title: "first title", Assignee: "coder"})
	if err != nil {
		t.Fatal(err)
	}
	path, _ := s.DocPath(Tasks, task.ID)
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
	testHookBeforeWrite = func(string) {
		if saves < 2 { // two saves in a row: the second re-read is raced too
			saves++
			edit(func(m map[string]any) { m["title"] = "edited title"; m["x-owner-note"] = "mine" })
		}
	}
	defer func() { testHookBeforeWrite = nil }()
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
	testHookBeforeWrite = func(string) { edit(func(m map[string]any) { m["title"] = "again" }) }
	if _, err := s.UpdateTask(ctx, cfg, task.ID, "lead", TaskChange{Status: StatusTodo}); err == nil || !strings.Contains(err.Error(), "changed by someone else") {
		t.Fatalf("UpdateTask under a saving editor: %v", err)
	}
	if cur, _ := s.Task(task.ID); cur.Status != StatusBacklog || cur.Title != "again" {
		t.Fatalf("after the refusal: %+v", cur)
	}
}
