package fsstore

import (
	"aipm/fsstore/internal/storage"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// killRace are the tasks of TestClaimKillRace, by kind.
type killRace struct {
	pool       []string // ready, nobody assigned
	blockers   []string // in progress, the lead's: the finisher sets them done
	dependents []string // todo, dependents[i] assigned to w<i+1>, waiting for blockers[i] (and blockers[i-1] for odd i)
	later      []string // todo, nobody assigned, later[i] waiting for blockers[i]: to claim once it is done
}

// newKillRace creates the tasks of a kill race: pool ready ones and
// blockers of each of the other kinds (half as many later ones).
func newKillRace(t *testing.T, s *Store, cfg *storage.Config, pool, blockers int) killRace {
	t.Helper()
	var k killRace
	for i := 0; i < pool; i++ {
		k.pool = append(k.pool, mustCreate(t, s, cfg, NewTask{Title: fmt.Sprintf("ready %d", i), Requester: "lead"}).ID)
	}
	for i := 0; i < blockers; i++ {
		k.blockers = append(k.blockers, mustCreate(t, s, cfg, NewTask{Title: fmt.Sprintf("blocker %d", i), Assignee: "lead", Status: StatusInProgress}).ID)
	}
	for i := 0; i < blockers; i++ {
		waits := []string{k.blockers[i]}
		if i%2 == 1 {
			waits = append(waits, k.blockers[i-1])
		}
		k.dependents = append(k.dependents, mustCreate(t, s, cfg, NewTask{Title: fmt.Sprintf("dependent %d", i), Assignee: fmt.Sprintf("w%d", i+1), Requester: "lead", BlockedBy: waits}).ID)
	}
	for i := 0; i < blockers/2; i++ {
		k.later = append(k.later, mustCreate(t, s, cfg, NewTask{Title: fmt.Sprintf("later %d", i), Requester: "lead", BlockedBy: []string{k.blockers[i]}}).ID)
	}
	return k
}

// TestClaimKillRace: the 8 agents claim (each finishing its task before
// the next, or, once restarted, the one its killed process left in
// progress), the lead sets the blockers of other tasks done (which starts
// those assigned and waiting for them, and makes claimable those nobody
// is assigned), and the watcher's pass (Flow) runs, all in processes
// SIGKILLed at random moments or at the failpoints of a claim and of a
// start, before either is written; then a fresh process runs the pass.
// No moment shows an agent with two tasks in progress, a task started
// twice or a claimed task that changed hands; in the end every task
// claimed is done by its one claimant (the later ones claimed only once
// their blocker was done), every dependent is in progress, started once by
// aipm after its blockers were done, and nothing is left ready or to
// claim. -torture.long runs it with ten times the tasks.
func TestClaimKillRace(t *testing.T) {
	pool, blockers := 100, 12
	if *tortureLong {
		pool, blockers = 1000, 120
	}
	s, cfg := raceProject(t, blockers)
	k := newKillRace(t, s, cfg, pool, blockers)
	dir := s.files.ProjectDir()
	os.WriteFile(filepath.Join(dir, raceGo), nil, 0o644)
	obs := watchRace(t, dir)
	log := &raceLog{}
	var claiming, flowing sync.WaitGroup
	for _, a := range claimants {
		claiming.Add(1)
		go func() {
			defer claiming.Done()
			log.slot(t, dir, "task-claimer", a, a, 200*time.Millisecond, failpointClaimUnwritten)
		}()
	}
	flowing.Add(1)
	go func() {
		defer flowing.Done()
		log.slot(t, dir, "task-flow", "flow", "", 200*time.Millisecond, failpointStartUnwritten)
	}()
	log.slot(t, dir, "task-finisher", "finisher", strings.Join(k.blockers, ","), 150*time.Millisecond, failpointStartUnwritten)
	os.WriteFile(filepath.Join(dir, raceClaimsEnd), nil, 0o644)
	claiming.Wait()
	os.WriteFile(filepath.Join(dir, raceStop), nil, 0o644)
	flowing.Wait()
	log.round(t, raceHelper(t, "task-flow", dir, "", "1"), "fresh flow", 0, "")
	for _, p := range obs.end() {
		t.Error(p)
	}
	checkClaimedDone(t, s, log, slices.Concat(k.pool, k.later))
	k.checkLaterClaims(t, s, log)
	k.checkDependents(t, s, log)
	checkNothingLeft(t, s, cfg)
	// The first finisher died at its first start, before it was written:
	// a pass started what it left. Each claimant's first process died at
	// its first claim.
	if log.atFail["finisher"] == 0 || len(log.said("started")) == 0 {
		t.Errorf("the finisher died %d times at %s, and the passes started %d tasks; want its first process dead there, and what it left started", log.atFail["finisher"], failpointStartUnwritten, len(log.said("started")))
	}
	for _, a := range claimants {
		if log.atFail[a] == 0 {
			t.Errorf("no process of %s died at %s", a, failpointClaimUnwritten)
		}
	}
	t.Logf("%d processes killed; %d claims, %d resumed, %d started by a pass", log.killed, len(log.said("claimed")), len(log.said("resumed")), len(log.said("started")))
}

// checkLaterClaims checks that each later task, as its claim printed it,
// went in progress once its blocker was done.
func (k killRace) checkLaterClaims(t *testing.T, s *Store, log *raceLog) {
	t.Helper()
	for _, ln := range log.said("claimed") {
		i := slices.Index(k.later, ln.words[1])
		if i < 0 || len(ln.words) < 4 {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, ln.words[3])
		blocker, err2 := s.Task(k.blockers[i])
		if err != nil || err2 != nil {
			t.Fatal(err, err2)
		}
		if at.Before(blocker.StatusChangedAt) {
			t.Errorf("task %s was claimed at %s, before its blocker %s was done at %s", ln.words[1], ln.words[3], blocker.ID, blocker.StatusChangedAt.Format(time.RFC3339Nano))
		}
	}
}

// checkDependents checks each blocker done by the lead, and each
// dependent in progress for its worker, started by aipm once, after its
// blockers were done; a pass started each at most once, and only them.
func (k killRace) checkDependents(t *testing.T, s *Store, log *raceLog) {
	t.Helper()
	for _, id := range k.blockers {
		if b, err := s.Task(id); err != nil || b.Status != StatusDone || b.StatusChangedBy != "lead" {
			t.Errorf("blocker %s: %s set by %q, %v; want done by lead", id, b.Status, b.StatusChangedBy, err)
		}
	}
	for i, id := range k.dependents {
		d, err := s.Task(id)
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != StatusInProgress || !d.StartedReady || d.StatusChangedBy != SystemSender || d.Assignee != fmt.Sprintf("w%d", i+1) {
			t.Errorf("dependent %s: %s (started by aipm: %v) set by %q, assigned to %q; want in progress, started by aipm for w%d", id, d.Status, d.StartedReady, d.StatusChangedBy, d.Assignee, i+1)
		}
		for _, b := range d.BlockedBy {
			blocker, err := s.Task(b)
			if err != nil {
				t.Fatal(err)
			}
			if d.StatusChangedAt.Before(blocker.StatusChangedAt) {
				t.Errorf("dependent %s started at %s, before its blocker %s was done at %s", id, d.StatusChangedAt.Format(time.RFC3339Nano), b, blocker.StatusChangedAt.Format(time.RFC3339Nano))
			}
		}
	}
	starts := map[string]int{}
	for _, ln := range log.said("started") {
		starts[ln.words[1]]++
	}
	for id, n := range starts {
		if n > 1 || !slices.Contains(k.dependents, id) {
			t.Errorf("the passes started task %s %d times; want only dependents, once", id, n)
		}
	}
}

// raceObserver reads, from a store of its own, the tasks in progress of a
// race's project over and over, and notes what no moment may show: an AI
// agent with two tasks in progress, a task in progress again after a
// second start, a task in progress that changed hands.
type raceObserver struct {
	s         *Store
	ai        map[string]bool
	startedAt map[string]time.Time // each task's in progress since, as first seen
	assignee  map[string]string    // each task's assignee in progress, as first seen
	problems  []string
	stop      chan struct{}
	stopped   chan struct{}
}

// watchRace starts the observer of the project in dir.
func watchRace(t *testing.T, dir string) *raceObserver {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := s.files.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	o := &raceObserver{s: s, ai: map[string]bool{}, startedAt: map[string]time.Time{}, assignee: map[string]string{}, stop: make(chan struct{}), stopped: make(chan struct{})}
	for _, a := range cfg.Agents {
		o.ai[a.ID] = a.Type == storage.AgentAI
	}
	go func() {
		defer close(o.stopped)
		for {
			select {
			case <-o.stop:
				return
			case <-time.After(2 * time.Millisecond):
				o.look()
			}
		}
	}()
	return o
}

// end stops the observer after one last look, and returns what it noted.
func (o *raceObserver) end() []string {
	close(o.stop)
	<-o.stopped
	o.look()
	return o.problems
}

// look is one reading of the tasks in progress.
func (o *raceObserver) look() {
	tasks, _, bad, err := o.s.Tasks(TaskFilter{Status: StatusInProgress})
	if err != nil || len(bad) > 0 {
		o.problems = append(o.problems, fmt.Sprintf("the tasks in progress could not be listed: %v %v", err, bad))
		return
	}
	byAgent := map[string][]string{}
	for _, t := range tasks {
		if at, ok := o.startedAt[t.ID]; ok && !at.Equal(t.StatusChangedAt) {
			o.problems = append(o.problems, fmt.Sprintf("task %s started twice: in progress since %s, then since %s", t.ID, at.Format(time.RFC3339Nano), t.StatusChangedAt.Format(time.RFC3339Nano)))
		}
		if a, ok := o.assignee[t.ID]; ok && a != t.Assignee {
			o.problems = append(o.problems, fmt.Sprintf("task %s in progress changed hands: %s, then %s", t.ID, a, t.Assignee))
		}
		o.startedAt[t.ID], o.assignee[t.ID] = t.StatusChangedAt, t.Assignee
		if o.ai[t.Assignee] {
			byAgent[t.Assignee] = append(byAgent[t.Assignee], t.ID)
		}
	}
	for a, ids := range byAgent {
		if len(ids) > 1 && o.together(ids) {
			o.problems = append(o.problems, fmt.Sprintf("agent %s had the tasks %s in progress at once", a, strings.Join(ids, ", ")))
		}
	}
}

// together proves the tasks ids in progress at one moment: each is read
// in progress twice, all first then all again, with the same start; as
// none leaves in progress and comes back with the same start, each was in
// progress between the two readings, which all span the moment between
// the two rounds. A listing alone proves nothing: it reads the files one
// after another.
func (o *raceObserver) together(ids []string) bool {
	first := map[string]time.Time{}
	for round := 0; round < 2; round++ {
		for _, id := range ids {
			t, err := o.s.Task(id)
			if err != nil || t.Status != StatusInProgress {
				return false
			}
			if at, ok := first[id]; ok && !at.Equal(t.StatusChangedAt) {
				return false
			}
			first[id] = t.StatusChangedAt
		}
	}
	return true
}
