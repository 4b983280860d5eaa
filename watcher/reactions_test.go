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
			r := newTaskReader(t, mode)
			other, err := r.p.store.CreateTask(context.Background(), r.p.cfg(), fsstore.NewTask{Title: "another", Assignee: "reviewer"})
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := r.listed(fsstore.TaskFilter{}); len(got) != 1 { // the index is built before the changes
				t.Fatalf("before: %v", got)
			}
			for _, step := range r.steps() {
				step.change()
				r.waitListed(step)
				if got, _ := r.listed(fsstore.TaskFilter{}); got[other.ID].Title != "another" {
					t.Fatalf("%s: the other task is gone from the list: %v", step.name, got)
				}
			}

			// A hand edit that breaks a file: not listed, reported as a problem
			// on the next call; mended, listed again.
			r.p.writeRename(r.p.path("tasks/"+other.ID+".json"), []byte("{ not json"))
			if got, bad := r.listed(fsstore.TaskFilter{}); len(got) != 0 || len(bad) != 1 {
				t.Fatalf("broken file: listed %v, problems %v", got, bad)
			}
			r.p.handEditRaw(other, t)
			if got, bad := r.listed(fsstore.TaskFilter{}); len(got) != 1 || len(bad) != 0 {
				t.Fatalf("mended file: listed %v, problems %v", got, bad)
			}
		})
	}
}

// taskReader is the process under test of TestTaskIndexSeesEdits: a Store
// of its own, with its own caches, reading the tasks of the project p.
type taskReader struct {
	t      *testing.T
	p      *project
	mode   string // "stat", or "inotify": the store watches the tasks
	reader *fsstore.Store
	id     string // the task the steps change, once created
}

func newTaskReader(t *testing.T, mode string) *taskReader {
	t.Helper()
	p := newProject(t, "", nil)
	reader, err := fsstore.Open(p.store.ProjectDir()) // the process under test, with its own caches
	if err != nil {
		t.Fatal(err)
	}
	if mode == "inotify" {
		reader.WatchTasks(wake.New())
	}
	return &taskReader{t: t, p: p, mode: mode, reader: reader}
}

// listed is the reader's tasks under f, by id, and its problems.
func (r *taskReader) listed(f fsstore.TaskFilter) (map[string]fsstore.Task, []error) {
	r.t.Helper()
	tasks, _, bad, err := r.reader.Tasks(f)
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[string]fsstore.Task{}
	for _, task := range tasks {
		out[task.ID] = task
	}
	return out, bad
}

func (r *taskReader) path() string { return r.p.path("tasks/" + r.id + ".json") }

// setStatusInPlace edits the task's status from from to to, the way an
// editor that saves in place does.
func (r *taskReader) setStatusInPlace(from, to string) {
	data, err := os.ReadFile(r.path())
	if err != nil {
		r.t.Fatal(err)
	}
	data = bytes.Replace(data, []byte(`"status": "`+from+`"`), []byte(`"status": "`+to+`"`), 1)
	// aipmStatus too, as aipm writes it: what is tested is the index seeing
	// the edit, not the rule for a status edited by hand (handEditAllowed)
	data = bytes.Replace(data, []byte(`"aipmStatus": "`+from+`"`), []byte(`"aipmStatus": "`+to+`"`), 1)
	f, err := os.OpenFile(r.path(), os.O_WRONLY|os.O_TRUNC, 0) // the same inode: no rename
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		r.t.Fatal(err)
	}
	f.Close()
}

// taskStep is one change to the task, and how the reader lists it after.
type taskStep struct {
	name    string
	change  func()
	filter  fsstore.TaskFilter
	status  string // "": not listed under filter
	inPlace bool   // seen once its event arrives (with a watcher)
}

// steps are the changes of TestTaskIndexSeesEdits, in order: the first
// creates the task.
func (r *taskReader) steps() []taskStep {
	ctx := context.Background()
	p, t := r.p, r.t
	return []taskStep{
		{"created by aipm", func() {
			task, err := p.store.CreateTask(ctx, p.cfg(), fsstore.NewTask{Title: "indexed", Assignee: "coder"})
			if err != nil {
				t.Fatal(err)
			}
			r.id = task.ID
		}, fsstore.TaskFilter{Assignee: "coder", Open: true}, fsstore.StatusTodo, false},
		{"updated by aipm", func() {
			if _, err := p.store.UpdateTask(ctx, p.cfg(), r.id, "lead", fsstore.TaskChange{Status: fsstore.StatusInProgress}); err != nil {
				t.Fatal(err)
			}
		}, fsstore.TaskFilter{Status: fsstore.StatusInProgress, Assignee: "coder"}, fsstore.StatusInProgress, false},
		{"updated by another process", func() {
			cmd := exec.Command(os.Args[0], "-test.run=^$", "helper:block-task")
			cmd.Env = append(os.Environ(), fsstore.EnvProjectDir+"="+p.store.ProjectDir(), "AIPM_TEST_TASK="+r.id)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("helper: %v\n%s", err, out)
			}
		}, fsstore.TaskFilter{Status: fsstore.StatusBlocked}, fsstore.StatusBlocked, false},
		{"edited in place", func() { r.setStatusInPlace("blocked", "todo") }, fsstore.TaskFilter{Status: fsstore.StatusTodo, Assignee: "coder"}, fsstore.StatusTodo, true},
		{"edited in place, same size", func() { r.setStatusInPlace("todo", "done") }, fsstore.TaskFilter{Status: fsstore.StatusDone}, fsstore.StatusDone, true},
		{"open filter after the edit", func() {}, fsstore.TaskFilter{Assignee: "coder", Open: true}, "", true},
		{"rename-saved by an editor", func() {
			p.handEdit(r.id, func(doc map[string]any) {
				doc["status"], doc["aipmStatus"] = fsstore.StatusCancelled, fsstore.StatusCancelled
			})
		}, fsstore.TaskFilter{Status: fsstore.StatusCancelled}, fsstore.StatusCancelled, false},
		{"rename-saved back", func() {
			p.handEdit(r.id, func(doc map[string]any) { doc["status"], doc["aipmStatus"] = fsstore.StatusTodo, fsstore.StatusTodo })
		}, fsstore.TaskFilter{Status: fsstore.StatusCancelled}, "", false},
		{"removed", func() {
			if err := os.Remove(r.path()); err != nil {
				t.Fatal(err)
			}
		}, fsstore.TaskFilter{}, "", false},
	}
}

// waitListed checks that the reader lists the task under step's filter
// with step's status (or not at all); an edit in place, with a watcher, it
// waits for.
func (r *taskReader) waitListed(step taskStep) {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, _ := r.listed(step.filter)
		task, ok := got[r.id]
		if ok == (step.status != "") && (!ok || task.Status == step.status) {
			return
		}
		if !(step.inPlace && r.mode == "inotify") || time.Now().After(deadline) {
			r.t.Fatalf("%s: listed under %+v: %v (status %q), want status %q", step.name, step.filter, ok, task.Status, step.status)
		}
		time.Sleep(5 * time.Millisecond) // the event is on its way
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
