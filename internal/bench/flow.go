package bench

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"aipm/fsstore"
	"aipm/internal/fixtures"
	"aipm/wake"
)

// flowTrigger is P12a: with aipm watch running (the aipm measured, a
// process of its own), the bench process sets task A, in progress for
// agent x, done (UpdateTask, as report_completed does, through a store
// that follows tasks/ as aipm serve's), and times it to pending/y.task.json
// written for task B, assigned to y and waiting for A, which aipm set in
// progress by itself; each sample beside one of the inotify floor
// (watch.go's, as P7a's: one fsync'd append -> its inotify wake).
func (b *bench) flowTrigger() ([]Row, error) {
	samples := b.starts * 10
	b.progress("P12a: %d blockers set done under aipm watch", samples)
	store, _, err := b.project("p12a", "x", "y")
	if err != nil {
		return nil, err
	}
	if err := fixtures.Of(store).Collections(fsstore.Pending, fsstore.Tasks, fsstore.Sessions, fsstore.Runs); err != nil {
		return nil, err
	}
	stop, err := b.watchProcess(store)
	if err != nil {
		return nil, err
	}
	defer stop()
	hub := wake.New()
	defer hub.Close()
	store.WatchTasks(hub)
	defer store.WatchTasks(nil)
	trigger, _ := store.TriggerPath(fsstore.Pending, "y", fsstore.PurposeTask)
	probe := newFloorLog(filepath.Join(b.root, "p12a-floor.jsonl"))
	defer probe.Close()
	cfg, err := store.LoadConfig()
	if err != nil {
		return nil, err
	}
	var lat, floor []time.Duration
	for i := -1; i < samples; i++ { // sample -1 waits for the watcher to be up
		b.doing.set(fmt.Sprintf("P12a: sample %d of %d", i+1, samples))
		d, err := b.flowSample(store, cfg, hub, trigger)
		if err != nil {
			return nil, err
		}
		f, err := waitFor(b.ctx, hub, probe.path, func() error { return probe.append(b.ctx, i) }, func() bool { return true })
		if err != nil {
			return nil, err
		}
		if i >= 0 {
			lat, floor = append(lat, d), append(floor, f)
		}
	}
	slices.Sort(lat)
	slices.Sort(floor)
	over := percentile(lat, 99) - percentile(floor, 99)
	return []Row{Row{
		id: "P12a", what: fmt.Sprintf("blocker done -> dependent's trigger written p50/p99 (aipm watch), %d samples", len(lat)),
		aipm:     ms(percentile(lat, 50)) + " / " + ms(percentile(lat, 99)),
		floor:    ms(percentile(floor, 50)) + " / " + ms(percentile(floor, 99)) + " (inotify wake)",
		compared: "p99 " + signedMs(over), target: fmt.Sprintf("p99 <= floor + %d ms", flowTriggerOver),
		aipmValues: latencies(lat), floorValues: latencies(floor),
	}.judged(atMost("p99 - floor p99", msOf(over), flowTriggerOver, "ms"))}, nil
}

// flowSample is one sample of P12a: A (x's, in progress) and B (y's,
// waiting for A) created, the watcher left to settle, then the time from
// A set done to y's task trigger; B is then set done by y, both task files
// removed and the trigger too, so that every sample starts from the same
// project.
func (b *bench) flowSample(store *fsstore.Store, cfg *fsstore.Config, hub *wake.Hub, trigger string) (time.Duration, error) {
	a, err := store.CreateTask(b.ctx, cfg, fsstore.NewTask{Title: "blocker", Assignee: "x", Status: fsstore.StatusInProgress})
	if err != nil {
		return 0, err
	}
	dep, err := store.CreateTask(b.ctx, cfg, fsstore.NewTask{Title: "dependent", Assignee: "y", BlockedBy: []string{a.ID}})
	if err != nil {
		return 0, err
	}
	time.Sleep(20 * time.Millisecond) // the watcher's passes for the new tasks are over
	if fileExists(trigger) {
		return 0, fmt.Errorf("bench: aipm watch wrote y's task trigger while task %s still waited for %s", dep.ID, a.ID)
	}
	d, err := waitFor(b.ctx, hub, trigger, func() error {
		_, err := store.UpdateTask(b.ctx, cfg, a.ID, "x", fsstore.TaskChange{Status: fsstore.StatusDone})
		return err
	}, func() bool { return fileExists(trigger) })
	if err != nil {
		return 0, err
	}
	if _, err := store.UpdateTask(b.ctx, cfg, dep.ID, "y", fsstore.TaskChange{Status: fsstore.StatusDone}); err != nil {
		return 0, err
	}
	for _, id := range []string{a.ID, dep.ID} { // every sample in the same project
		if err := fixtures.Of(store).Remove(fsstore.Tasks, id); err != nil {
			return 0, err
		}
	}
	return d, b.expireTrigger(store, "y", fsstore.PurposeTask)
}

// expireTrigger removes agent's trigger of purpose until the watcher
// leaves it removed (a pass that looked before the change may write it
// again).
func (b *bench) expireTrigger(store *fsstore.Store, agent, purpose string) error {
	for i := 0; i < 5000; i++ {
		_, removed, err := store.Triggers().Expire(b.ctx, agent, purpose, 0, time.Now())
		if err != nil || !removed {
			return err
		}
		time.Sleep(2 * time.Millisecond)
	}
	return errors.New("bench: the watcher did not settle")
}

// watchProcess starts aipm watch on store's project, and returns what
// stops it; its exit before then fails the target at once.
func (b *bench) watchProcess(store *fsstore.Store) (func(), error) {
	cmd := b.command(b.aipm, "--dir", store.ProjectDir(), "watch")
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start aipm watch: %w", err)
	}
	exited := make(chan struct{})
	stopping := make(chan struct{})
	go func() {
		err := cmd.Wait()
		select {
		case <-stopping:
		default:
			b.failWith(fmt.Errorf("aipm watch exited (%v)", exitText(err)))
		}
		close(exited)
	}()
	return func() {
		close(stopping)
		cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	}, nil
}

// readyLists is P12r and P12w: the ready list and the waiting list (Tasks
// with Ready, or Waiting, and a limit of 50: the store's call behind aipm
// task list --ready and --waiting) among n tasks against the same call
// among 100, calls at the two sizes interleaved. Each size is a project of
// its own, half its tasks ready and half waiting, in turn, written as
// files (fixtures), and a store that follows tasks/ as aipm serve's does
// (WatchTasks).
func (b *bench) readyLists() ([]Row, error) {
	n := b.piled()
	b.progress("P12r, P12w: the ready and the waiting list, %d tasks vs 100", n)
	hub := wake.New()
	defer hub.Close()
	large, err := b.flowTasks("p12-large", n, hub)
	if err != nil {
		return nil, err
	}
	small, err := b.flowTasks("p12-small", 100, hub)
	if err != nil {
		return nil, err
	}
	var rows []Row
	for _, l := range []struct {
		id, what string
		f        fsstore.TaskFilter
	}{
		{"P12r", "ready list (50)", fsstore.TaskFilter{Ready: true, Limit: 50}},
		{"P12w", "waiting list (50)", fsstore.TaskFilter{Waiting: true, Limit: 50}},
	} {
		b.doing.set(fmt.Sprintf("%s: %d calls at each size", l.id, b.reads))
		var big, little []time.Duration
		for i := 0; i < b.reads; i++ {
			for _, at := range []struct {
				s   *fsstore.Store
				lat *[]time.Duration
			}{{large, &big}, {small, &little}} {
				d, err := timedList(at.s, l.f)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", l.id, err)
				}
				*at.lat = append(*at.lat, d)
			}
		}
		rows = append(rows, listRow(l.id, l.what, n, big, little))
	}
	return rows, nil
}

// timedList times one list of f, which must give 50 tasks.
func timedList(s *fsstore.Store, f fsstore.TaskFilter) (time.Duration, error) {
	start := time.Now()
	tasks, _, bad, err := s.Tasks(f)
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if len(tasks) != f.Limit || len(bad) > 0 {
		return 0, fmt.Errorf("bench: the list gave %d tasks and %d problems, want %d and none", len(tasks), len(bad), f.Limit)
	}
	return d, nil
}

// listRow is the row of a list's cost among n tasks (big) against 100
// (little), by their p50.
func listRow(id, what string, n int, big, little []time.Duration) Row {
	slices.Sort(big)
	slices.Sort(little)
	ratio := float64(percentile(big, 50)) / float64(percentile(little, 50))
	return Row{
		id: id, what: fmt.Sprintf("%s p50, %d vs 100 tasks (slowest %s)", what, n, ms(big[len(big)-1])),
		aipm: ms(percentile(big, 50)), floor: ms(percentile(little, 50)) + " (100)",
		compared: fmt.Sprintf("%.2fx", ratio), target: "<= 1.5x",
		aipmValues: values{"p50_ms": msOf(percentile(big, 50)), "slowest_ms": msOf(big[len(big)-1])}, floorValues: median(little),
	}.judged(atMost("p50 / floor p50", ratio, 1.5, "x"))
}

// flowTasks makes project name with n task files, newest first: a ready
// one (todo, waiting for nothing), then one waiting for it, and so on; and
// opens it with a store whose task index follows tasks/ through hub.
func (b *bench) flowTasks(name string, n int, hub *wake.Hub) (*fsstore.Store, error) {
	store, _, err := b.project(name, "r", "w")
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	prev := ""
	for i := range n {
		t := fsstore.Task{
			ID: fsstore.NewID(fsstore.PrefixTask), Title: fmt.Sprintf("task %d", i), Description: "a task of ordinary length, written for the benchmark",
			Status: fsstore.StatusTodo, Priority: "normal", Assignee: []string{"r", "w"}[i%2], ApprovalStatus: fsstore.ApprovalApproved,
			StatusChangedBy: "w", StatusChangedAt: now, CreatedAt: now, UpdatedAt: now,
		}
		if i%2 == 1 {
			t.BlockedBy = []string{prev}
		}
		if err := fixtures.Of(store).Doc(fsstore.Tasks, t.ID, t); err != nil {
			return nil, err
		}
		prev = t.ID
	}
	opened, err := fsstore.Open(store.ProjectDir())
	if err != nil {
		return nil, err
	}
	opened.WatchTasks(hub)
	return opened, nil
}
