package watcher

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"aipm/fsstore"
	"aipm/wake"
)

// The task index of a long-running process (one Store) sees every way a
// task file changes, with and without a watcher: what aipm writes (in this
// process or another), an editor's rename-save and a removal on the very
// next call; an edit in place on the next call without a watcher, and once
// its event arrives with one (the wake.Hub of aipm serve).
func TestTaskIndexSeesEdits(t *testing.T) {
	for _, mode := range []string{"stat", "inotify"} {
		t.Run(mode, func(t *testing.T) {
			p := newProject(t, "", nil)
			ctx := context.Background()
			reader, err := fsstore.Open(p.store.ProjectDir()) // the process under test, with its own caches
			if err != nil {
				t.Fatal(err)
			}
			if mode == "inotify" {
				reader.WatchTasks(wake.New())
			}
			other, err := p.store.CreateTask(ctx, p.cfg(), fsstore.NewTask{Title: "another", Assignee: "reviewer"})
			if err != nil {
				t.Fatal(err)
			}
			listed := func(f fsstore.TaskFilter) (map[string]fsstore.Task, []error) {
				t.Helper()
				tasks, _, bad, err := reader.Tasks(f)
				if err != nil {
					t.Fatal(err)
				}
				out := map[string]fsstore.Task{}
				for _, task := range tasks {
					out[task.ID] = task
				}
				return out, bad
			}
			if got, _ := listed(fsstore.TaskFilter{}); len(got) != 1 { // the index is built before the changes
				t.Fatalf("before: %v", got)
			}

			var id string
			path := func() string { return p.path("tasks/" + id + ".json") }
			setStatusInPlace := func(from, to string) {
				data, err := os.ReadFile(path())
				if err != nil {
					t.Fatal(err)
				}
				data = bytes.Replace(data, []byte(`"status": "`+from+`"`), []byte(`"status": "`+to+`"`), 1)
				f, err := os.OpenFile(path(), os.O_WRONLY|os.O_TRUNC, 0) // the same inode: no rename
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.Write(data); err != nil {
					t.Fatal(err)
				}
				f.Close()
			}
			for _, step := range []struct {
				name    string
				change  func()
				filter  fsstore.TaskFilter
				status  string // "": not listed under filter
				inPlace bool   // seen once its event arrives (with a watcher)
			}{
				{"created by aipm", func() {
					task, err := p.store.CreateTask(ctx, p.cfg(), fsstore.NewTask{Title: "indexed", Assignee: "coder"})
					if err != nil {
						t.Fatal(err)
					}
					id = task.ID
				}, fsstore.TaskFilter{Assignee: "coder", Open: true}, fsstore.StatusTodo, false},
				{"updated by aipm", func() {
					if _, err := p.store.UpdateTask(ctx, p.cfg(), id, "lead", fsstore.TaskChange{Status: fsstore.StatusInProgress}); err != nil {
						t.Fatal(err)
					}
				}, fsstore.TaskFilter{Status: fsstore.StatusInProgress, Assignee: "coder"}, fsstore.StatusInProgress, false},
				{"updated by another process", func() {
					cmd := exec.Command(os.Args[0], "-test.run=^$", "helper:block-task")
					cmd.Env = append(os.Environ(), fsstore.EnvProjectDir+"="+p.store.ProjectDir(), "AIPM_TEST_TASK="+id)
					if out, err := cmd.CombinedOutput(); err != nil {
						t.Fatalf("helper: %v\n%s", err, out)
					}
				}, fsstore.TaskFilter{Status: fsstore.StatusBlocked}, fsstore.StatusBlocked, false},
				{"edited in place", func() { setStatusInPlace("blocked", "todo") }, fsstore.TaskFilter{Status: fsstore.StatusTodo, Assignee: "coder"}, fsstore.StatusTodo, true},
				{"edited in place, same size", func() { setStatusInPlace("todo", "done") }, fsstore.TaskFilter{Status: fsstore.StatusDone}, fsstore.StatusDone, true},
				{"open filter after the edit", func() {}, fsstore.TaskFilter{Assignee: "coder", Open: true}, "", true},
				{"rename-saved by an editor", func() {
					p.handEdit(id, func(doc map[string]any) { doc["status"] = fsstore.StatusCancelled })
				}, fsstore.TaskFilter{Status: fsstore.StatusCancelled}, fsstore.StatusCancelled, false},
				{"rename-saved back", func() {
					p.handEdit(id, func(doc map[string]any) { doc["status"] = fsstore.StatusTodo })
				}, fsstore.TaskFilter{Status: fsstore.StatusCancelled}, "", false},
				{"removed", func() {
					if err := os.Remove(path()); err != nil {
						t.Fatal(err)
					}
				}, fsstore.TaskFilter{}, "", false},
			} {
				step.change()
				deadline := time.Now().Add(20 * time.Second)
				for {
					got, _ := listed(step.filter)
					task, ok := got[id]
					if ok == (step.status != "") && (!ok || task.Status == step.status) {
						break
					}
					if !(step.inPlace && mode == "inotify") || time.Now().After(deadline) {
						t.Fatalf("%s: listed under %+v: %v (status %q), want status %q", step.name, step.filter, ok, task.Status, step.status)
					}
					time.Sleep(5 * time.Millisecond) // the event is on its way
				}
				if got, _ := listed(fsstore.TaskFilter{}); got[other.ID].Title != "another" {
					t.Fatalf("%s: the other task is gone from the list: %v", step.name, got)
				}
			}

			// A hand edit that breaks a file: not listed, reported as a problem
			// on the next call; mended, listed again.
			p.writeRename(p.path("tasks/"+other.ID+".json"), []byte("{ not json"))
			if got, bad := listed(fsstore.TaskFilter{}); len(got) != 0 || len(bad) != 1 {
				t.Fatalf("broken file: listed %v, problems %v", got, bad)
			}
			p.handEditRaw(other, t)
			if got, bad := listed(fsstore.TaskFilter{}); len(got) != 1 || len(bad) != 0 {
				t.Fatalf("mended file: listed %v, problems %v", got, bad)
			}
		})
	}
}

// handEditRaw writes task back as its file (rename-save).
func (p *project) handEditRaw(task fsstore.Task, t *testing.T) {
	data, err := fsstore.EncodeDoc(task)
	if err != nil {
		t.Fatal(err)
	}
	p.writeRename(p.path("tasks/"+task.ID+".json"), data)
}

// Tasks returns the newest tasks first, at most limit of them, and
// says whether more match.
func TestTasksLimit(t *testing.T) {
	p := newProject(t, "", nil)
	var ids []string
	for range 5 {
		task, err := p.store.CreateTask(context.Background(), p.cfg(), fsstore.NewTask{Title: "t", Assignee: "coder"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}
	slices.Reverse(ids)
	for _, tc := range []struct {
		limit int
		want  []string
		more  bool
	}{{2, ids[:2], true}, {5, ids, false}, {0, ids, false}, {9, ids, false}} {
		tasks, more, _, err := p.store.Tasks(fsstore.TaskFilter{Assignee: "coder", Limit: tc.limit})
		var got []string
		for _, task := range tasks {
			got = append(got, task.ID)
		}
		if err != nil || !slices.Equal(got, tc.want) || more != tc.more {
			t.Errorf("limit %d: %v more=%v %v; want %v more=%v", tc.limit, got, more, err, tc.want, tc.more)
		}
	}
	if _, _, _, err := p.store.Tasks(fsstore.TaskFilter{Status: "doing", Limit: 1}); err == nil || errors.Is(err, fsstore.ErrNotFound) {
		t.Errorf("unknown status: %v", err)
	}
}
