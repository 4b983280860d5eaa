package fsstore

import (
	"aipm/fsstore/internal/storage"
	"bytes"
	"context"
	"os"
	"slices"
	"testing"
)

// quiet is a DirWatcher whose events never arrive: what an in-place edit
// looks like before its event does.
type quiet struct{}

func (quiet) WatchDir(string, func(string)) (func(), error) { return func() {}, nil }

// A listing whose index is stale about a task (edited in place, its event
// not yet arrived) checks the document it read against the filter, passes
// it over and looks further, so a page is still full and has_more true.
func TestTasksLooksPastStaleEntries(t *testing.T) {
	s, cfg := newConvStore(t)
	ctx := context.Background()
	s.WatchTasks(quiet{})
	var ids []string
	for range 4 {
		task, err := s.CreateTask(ctx, cfg, NewTask{Title: "t", Assignee: "a"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}
	slices.Reverse(ids) // newest first
	if tasks, _, _, err := s.Tasks(TaskFilter{Assignee: "a"}); err != nil || len(tasks) != 4 {
		t.Fatalf("before: %v %v", tasks, err)
	}
	// The two newest move to b in place; the index has not heard of it.
	for _, id := range ids[:2] {
		path, _ := s.files.DocPath(storage.Tasks, id)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, bytes.Replace(data, []byte(`"assignee": "a"`), []byte(`"assignee": "b"`), 1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		limit int
		want  []string
		more  bool
	}{{1, ids[2:3], true}, {2, ids[2:], false}, {0, ids[2:], false}} {
		tasks, more, _, err := s.Tasks(TaskFilter{Assignee: "a", Limit: tc.limit})
		var got []string
		for _, task := range tasks {
			got = append(got, task.ID)
		}
		if err != nil || !slices.Equal(got, tc.want) || more != tc.more {
			t.Errorf("limit %d: %v more=%v %v; want %v more=%v", tc.limit, got, more, err, tc.want, tc.more)
		}
	}
	// What the listing read marks those tasks for a fresh look: the index
	// now lists them under b.
	if tasks, _, _, err := s.Tasks(TaskFilter{Assignee: "b"}); err != nil || len(tasks) != 2 {
		t.Fatalf("under b: %v %v", tasks, err)
	}
}

// Tasks with the same indexed fields share them in the index; one edited
// in place gets its own, and the others keep theirs. A task with blockers
// is kept apart (its fields hold a slice).
func TestTaskIndexSharesFields(t *testing.T) {
	s, cfg := newConvStore(t)
	ctx := context.Background()
	var ids []string
	for range 3 {
		task, err := s.CreateTask(ctx, cfg, NewTask{Title: "t", Assignee: "a"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}
	blocked, err := s.CreateTask(ctx, cfg, NewTask{Title: "t", Assignee: "a", BlockedBy: ids[:1]})
	if err != nil {
		t.Fatal(err)
	}
	fields := func() map[string]*taskFields {
		t.Helper()
		if _, _, _, err := s.Tasks(TaskFilter{}); err != nil {
			t.Fatal(err)
		}
		ix := &s.caches.tasks
		ix.mu.Lock()
		defer ix.mu.Unlock()
		out := map[string]*taskFields{}
		for _, e := range ix.order {
			out[e.id] = e.taskFields
		}
		return out
	}
	f := fields()
	if f[ids[0]] != f[ids[1]] || f[ids[1]] != f[ids[2]] {
		t.Errorf("three tasks of the same fields hold %p %p %p, want one", f[ids[0]], f[ids[1]], f[ids[2]])
	}
	if f[blocked.ID] == f[ids[0]] || !slices.Equal(f[blocked.ID].flow.blockedBy, ids[:1]) {
		t.Errorf("the blocked task's fields %+v are shared or lost", *f[blocked.ID])
	}
	path, _ := s.files.DocPath(storage.Tasks, ids[1])
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bytes.Replace(data, []byte(`"assignee": "a"`), []byte(`"assignee": "b"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	f = fields()
	if f[ids[1]].assignee != "b" || f[ids[0]].assignee != "a" || f[ids[2]].assignee != "a" || f[ids[0]] != f[ids[2]] {
		t.Errorf("after the edit of one: assignees %q %q %q, want a b a (the others still sharing)", f[ids[0]].assignee, f[ids[1]].assignee, f[ids[2]].assignee)
	}
}
