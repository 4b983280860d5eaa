package fsstore

import (
	"aipm/fsstore/internal/storage"
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func init() {
	helperRoles["deps-editor"] = helperDepsEditor
	helperRoles["deps-racer"] = helperDepsRacer
}

// goFile is the file the two helpers of a round of TestDepsEditRace wait
// for, named after the round's task.
func goFile(dir, task string) string { return filepath.Join(dir, "go-"+task) }

// helperDepsEditor is a human's editor adding a blocker to a task's file:
// arg is "TASK:BLOCKER". Once the round's go file exists and n
// microseconds have passed, it reads the file under its flock (as
// docs/files.md asks of an editor), adds BLOCKER to blockedBy and saves it
// by rename-replace, then prints "edited STATUS": the status it read, and
// wrote back.
func helperDepsEditor(h *helperProc) error {
	task, blocker, _ := strings.Cut(h.arg, ":")
	path, err := h.store.files.DocPath(storage.Tasks, task)
	if err != nil {
		return err
	}
	h.say(raceReady)
	waitForFile(goFile(h.dir, task))
	time.Sleep(time.Duration(h.n) * time.Microsecond)
	doc, err := editDoc(path, ".deps-editor-swap", true, func(doc map[string]any) {
		blockers, _ := doc["blockedBy"].([]any)
		doc["blockedBy"] = append(blockers, blocker)
	})
	if err != nil {
		return err
	}
	h.say("edited", fmt.Sprint(doc["status"]))
	return nil
}

// helperDepsRacer is the lead setting a task's last blocker done while
// the watcher's pass runs: arg is "BLOCKER:TASK". Once the round's go file
// exists, it sets BLOCKER done (which starts TASK if it is ready then),
// then runs n passes of work that flows (Flow), printing "started ID" for
// each task one started.
func helperDepsRacer(h *helperProc) error {
	blocker, task, _ := strings.Cut(h.arg, ":")
	cfg, err := h.store.files.LoadConfig()
	if err != nil {
		return err
	}
	h.say(raceReady)
	waitForFile(goFile(h.dir, task))
	if _, err := h.store.UpdateTask(h.ctx, cfg, blocker, "lead", TaskChange{Status: StatusDone}); err != nil {
		return err
	}
	for i := 0; i < h.n; i++ {
		started, err := h.store.Flow(h.ctx, cfg)
		if err != nil {
			return err
		}
		for _, t := range started {
			h.say("started", t.ID)
		}
	}
	return nil
}

// linesOf starts cmd and returns the lines it prints, on a channel closed
// at the end of its output (then the caller waits for cmd).
func linesOf(t *testing.T, cmd *exec.Cmd) <-chan string {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines
}

// depsRound is one round of TestDepsEditRace: task waits for blocker, in
// progress; the editor adds added, in progress too, to what task waits
// for, while the racer sets blocker done and runs the watcher's pass.
type depsRound struct {
	blocker, added, task Task
	edited               string // the status the editor read and wrote back
	starts               int    // how many times the racer's passes started task
}

// TestDepsEditRace: a human's editor adds a blocker, not done, to a
// task's file (its blockedBy rewritten, the file replaced by a rename)
// while another process sets the task's one blocker done and runs the
// watcher's pass (Flow) over and over. Every round ends in one of the two
// states the rules allow: the task started once, when its blocker was
// done and before the edit, and stays started with the blocker added
// (no start of a task already started); or not started while the added
// blocker is not done, and started once when it is. The edit itself is
// never lost. -torture.long runs 500 rounds.
func TestDepsEditRace(t *testing.T) {
	rounds := 20
	if *tortureLong {
		rounds = 500
	}
	s, cfg := raceProject(t, 1)
	outcomes := map[string]int{}
	spread := 4000 // µs, of the editor's wait: widened while it edits first, narrowed while it edits last
	for range rounds {
		r := depsRound{
			blocker: mustCreate(t, s, cfg, NewTask{Title: "blocker", Assignee: "lead", Status: StatusInProgress}),
			added:   mustCreate(t, s, cfg, NewTask{Title: "added blocker", Assignee: "lead", Status: StatusInProgress}),
		}
		r.task = mustCreate(t, s, cfg, NewTask{Title: "waits", Assignee: "w1", Requester: "lead", BlockedBy: []string{r.blocker.ID}})
		r.race(t, s, rand.IntN(spread))
		r.check(t, s)
		outcomes[r.edited]++
		if r.edited == StatusTodo {
			spread = min(spread*3/2, 200_000)
		} else {
			spread = max(spread*2/3, 500)
		}
	}
	t.Logf("the editor read the task %v times", outcomes)
}

// race runs the round's editor, waiting wait µs, and racer at once.
func (r *depsRound) race(t *testing.T, s *Store, wait int) {
	t.Helper()
	dir := s.files.ProjectDir()
	editor := raceHelper(t, "deps-editor", dir, r.task.ID+":"+r.added.ID, strconv.Itoa(wait))
	racer := raceHelper(t, "deps-racer", dir, r.blocker.ID+":"+r.task.ID, "20")
	edits, passes := linesOf(t, editor), linesOf(t, racer)
	if <-edits != raceReady || <-passes != raceReady {
		t.Fatal("a helper of the round did not start")
	}
	os.WriteFile(goFile(dir, r.task.ID), nil, 0o644)
	for line := range edits {
		r.edited, _ = strings.CutPrefix(line, "edited ")
	}
	for line := range passes {
		if line == "started "+r.task.ID {
			r.starts++
		}
	}
	if err := editor.Wait(); err != nil {
		t.Fatalf("editor: %v", err)
	}
	if err := racer.Wait(); err != nil {
		t.Fatalf("racer: %v", err)
	}
}

// check judges the round's end, then sets the added blocker done: the
// task is in progress, started once.
func (r *depsRound) check(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	cfg, err := s.files.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Flow(ctx, cfg); err != nil { // the watcher's next pass
		t.Fatal(err)
	}
	task, blocker := mustTask(t, s, r.task.ID), mustTask(t, s, r.blocker.ID)
	if want := []string{r.blocker.ID, r.added.ID}; !slices.Equal(task.BlockedBy, want) {
		t.Fatalf("task %s waits for %q, want %q: the edit was lost", task.ID, task.BlockedBy, want)
	}
	r.checkEdited(t, task, blocker)
	if _, err := s.UpdateTask(ctx, cfg, r.added.ID, "lead", TaskChange{Status: StatusDone}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Flow(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	after, added := mustTask(t, s, r.task.ID), mustTask(t, s, r.added.ID)
	if after.Status != StatusInProgress || after.StatusChangedBy != SystemSender {
		t.Fatalf("task %s is %s (set by %q) once all it waits for is done, want in progress", task.ID, after.Status, after.StatusChangedBy)
	}
	if r.edited == StatusInProgress && !after.StatusChangedAt.Equal(task.StatusChangedAt) {
		t.Fatalf("task %s, in progress since %s, started again at %s when its added blocker was done", task.ID, task.StatusChangedAt, after.StatusChangedAt)
	}
	if r.edited == StatusTodo && after.StatusChangedAt.Before(added.StatusChangedAt) {
		t.Fatalf("task %s started at %s, before its added blocker was done at %s", task.ID, after.StatusChangedAt, added.StatusChangedAt)
	}
}

// checkEdited judges task as the round left it (blocker its first
// blocker): in progress if the editor read it so, else still waiting.
func (r *depsRound) checkEdited(t *testing.T, task, blocker Task) {
	t.Helper()
	switch r.edited {
	case StatusInProgress: // started before the edit, when its blocker was done
		if task.Status != StatusInProgress || !task.StartedReady || task.StatusChangedBy != SystemSender || task.StatusChangedAt.Before(blocker.StatusChangedAt) || r.starts > 1 {
			t.Fatalf("the editor read task %s in progress; now it is %s (started by aipm: %v, by %q at %s, its blocker done at %s), started %d times by a pass", task.ID, task.Status, task.StartedReady, task.StatusChangedBy, task.StatusChangedAt, blocker.StatusChangedAt, r.starts)
		}
	case StatusTodo: // edited before it started: it waits for the added blocker
		if task.Status != StatusTodo || r.starts > 0 {
			t.Fatalf("the editor made task %s wait for %s, not done; now it is %s, started %d times by a pass: it started while it waited", task.ID, r.added.ID, task.Status, r.starts)
		}
	default:
		t.Fatalf("the editor read task %s as %q", task.ID, r.edited)
	}
}

// mustTask reads task id, or fails the test.
func mustTask(t *testing.T, s *Store, id string) Task {
	t.Helper()
	task, err := s.Task(id)
	if err != nil {
		t.Fatal(err)
	}
	return task
}
