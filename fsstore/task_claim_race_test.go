package fsstore

import (
	"aipm/fsstore/internal/storage"
	"aipm/internal/failpoint"
	"aipm/internal/helperproc"
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func init() {
	helperRoles["task-claimer"] = helperTaskClaimer
	helperRoles["task-finisher"] = helperTaskFinisher
	helperRoles["task-flow"] = helperTaskFlow
}

// The files the claim races' helpers wait on, in the project directory:
// raceGo lets the claimants start at once; raceClaimsEnd lets a claimant
// with nothing to claim exit (until it exists, more may become claimable);
// raceStop ends the flow passes.
const (
	raceGo        = "go"
	raceClaimsEnd = "claims-end"
	raceStop      = "stop"
)

// raceReady is the first line a helper of the claim races prints, when it
// is about to start its work: a kill is timed from it.
const raceReady = "ready"

// waitForFile waits until path exists.
func waitForFile(path string) {
	for !fileExists(path) {
		time.Sleep(100 * time.Microsecond)
	}
}

// helperTaskClaimer is AI agent arg at work on the ready queue. Once it
// said it is ready and the go file exists, it finishes the task it has in progress, if any (its
// process before it was killed with it), printing "resumed ID"; then it
// claims the next task (Claim with no id), printing "claimed ID STATUS
// STATUS_CHANGED_AT", and sets it done, printing "done ID", until nothing
// is left to claim after the claims-end file exists.
func helperTaskClaimer(h *helperProc) error {
	cfg, err := h.store.files.LoadConfig()
	if err != nil {
		return err
	}
	h.say(raceReady)
	waitForFile(filepath.Join(h.dir, raceGo))
	own, _, _, err := h.store.Tasks(TaskFilter{Assignee: h.arg, Status: StatusInProgress})
	if err != nil {
		return err
	}
	for _, t := range own {
		h.say("resumed", t.ID)
		if err := h.finishTask(cfg, t.ID); err != nil {
			return err
		}
	}
	for {
		ending := fileExists(filepath.Join(h.dir, raceClaimsEnd)) // before the claim: one made after it sees all
		t, err := h.store.Claim(h.ctx, cfg, h.arg, "")
		var ce *storage.CodeError
		switch {
		case errors.As(err, &ce) && ce.Code == storage.CodeNothingToClaim:
			if ending {
				return nil
			}
			time.Sleep(5 * time.Millisecond)
			continue
		case err != nil:
			return err
		}
		h.say("claimed", t.ID, t.Status, t.StatusChangedAt.Format(time.RFC3339Nano))
		if err := h.finishTask(cfg, t.ID); err != nil {
			return err
		}
	}
}

// finishTask sets task id done as its assignee, the helper's agent, and
// says so.
func (h *helperProc) finishTask(cfg *storage.Config, id string) error {
	if _, err := h.store.UpdateTask(h.ctx, cfg, id, h.arg, TaskChange{Status: StatusDone}); err != nil {
		return err
	}
	h.say("done", id)
	return nil
}

// say prints one line of words, at once: a line printed is a thing done.
func (h *helperProc) say(words ...string) {
	fmt.Fprintln(h.out, strings.Join(words, " "))
	h.out.Flush()
}

// helperTaskFinisher is the human lead setting done, in a random order,
// each of the tasks arg names (comma-separated) that is not done yet,
// printing "done ID": each start what waited for it (UpdateTask's flow).
func helperTaskFinisher(h *helperProc) error {
	cfg, err := h.store.files.LoadConfig()
	if err != nil {
		return err
	}
	h.say(raceReady)
	ids := strings.Split(h.arg, ",")
	rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	for _, id := range ids {
		t, err := h.store.Task(id)
		if err != nil {
			return err
		}
		if t.Status == StatusDone {
			continue
		}
		if _, err := h.store.UpdateTask(h.ctx, cfg, id, "lead", TaskChange{Status: StatusDone}); err != nil {
			return err
		}
		h.say("done", id)
	}
	return nil
}

// helperTaskFlow is the watcher's pass of work that flows (Flow): once
// when n is 1, else every few milliseconds until the stop file exists. It
// prints "started ID" for each task a pass started.
func helperTaskFlow(h *helperProc) error {
	cfg, err := h.store.files.LoadConfig()
	if err != nil {
		return err
	}
	h.say(raceReady)
	for {
		stopping := fileExists(filepath.Join(h.dir, raceStop))
		started, err := h.store.Flow(h.ctx, cfg)
		if err != nil {
			return err
		}
		for _, t := range started {
			h.say("started", t.ID)
		}
		if h.n == 1 || stopping {
			return nil
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// raceHelper is helperproc.Command for the races' many short processes:
// under the race detector, without its second of sleep at exit (GORACE
// atexit_sleep_ms; other options kept), which would be most of each
// process's life.
func raceHelper(t *testing.T, role string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := helperproc.Command(t, role, args...)
	cmd.Env = append(cmd.Env, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	return cmd
}

// claimants are the AI agents of the claim races, a1..a8.
var claimants = []string{"a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8"}

// raceProject is a project with the human lead, the claimants and the AI
// agents w1..w<workers>, and its config.
func raceProject(t *testing.T, workers int) (*Store, *storage.Config) {
	t.Helper()
	s := newTestStore(t)
	agents := []NewAgent{{ID: "lead", Type: storage.AgentHuman}}
	for _, a := range claimants {
		agents = append(agents, NewAgent{ID: a, Type: storage.AgentAI})
	}
	for i := 1; i <= workers; i++ {
		agents = append(agents, NewAgent{ID: fmt.Sprintf("w%d", i), Type: storage.AgentAI})
	}
	for _, a := range agents {
		if _, err := s.AddAgent(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := s.files.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	return s, cfg
}

// mustCreate creates a task, or fails the test.
func mustCreate(t *testing.T, s *Store, cfg *storage.Config, in NewTask) Task {
	t.Helper()
	task, err := s.CreateTask(context.Background(), cfg, in)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// raceLine is one line a helper printed: who printed it (its agent or
// role) and its words.
type raceLine struct {
	who   string
	words []string
}

// raceLog gathers what the helpers of a race printed.
type raceLog struct {
	mu     sync.Mutex
	lines  []raceLine
	killed int
	atFail map[string]int // by who: the processes that died at their failpoint
	ready  int            // the processes that said they are ready
}

// readyCount is how many processes said they are ready.
func (l *raceLog) readyCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ready
}

// add records a line printed by who.
func (l *raceLog) add(who, line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, raceLine{who: who, words: strings.Fields(line)})
}

// said are the lines whose first word is verb.
func (l *raceLog) said(verb string) []raceLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []raceLine
	for _, ln := range l.lines {
		if len(ln.words) > 1 && ln.words[0] == verb {
			out = append(out, ln)
		}
	}
	return out
}

// round runs one helper process to its end, recording what it prints as
// who's: SIGKILLed kill after it said it is ready when kill is not 0,
// started with the failpoint fp set when fp is not "". It says whether the
// process died of a SIGKILL (ours or the failpoint's); any other failure
// fails the test.
func (l *raceLog) round(t *testing.T, cmd *exec.Cmd, who string, kill time.Duration, fp string) bool {
	t.Helper()
	if fp != "" {
		cmd.Env = append(cmd.Env, failpoint.Env+"="+fp)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Error(err)
		return false
	}
	if err := cmd.Start(); err != nil {
		t.Error(err)
		return false
	}
	var timer *time.Timer
	r := bufio.NewReader(stdout)
	for {
		b, err := r.ReadString('\n')
		if err != nil {
			break // a line cut by the kill was not printed
		}
		line := strings.TrimSuffix(b, "\n")
		if line != raceReady {
			l.add(who, line)
			continue
		}
		l.mu.Lock()
		l.ready++
		l.mu.Unlock()
		if kill > 0 {
			timer = time.AfterFunc(kill, func() { cmd.Process.Signal(syscall.SIGKILL) })
		}
	}
	if timer != nil {
		timer.Stop()
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL && (kill > 0 || fp != "") {
		l.mu.Lock()
		l.killed++
		if kill == 0 {
			if l.atFail == nil {
				l.atFail = map[string]int{}
			}
			l.atFail[who]++
		}
		l.mu.Unlock()
		return true
	}
	if err != nil {
		t.Errorf("%s: %v", who, err)
	}
	return false
}

// hazard is what befalls round i of a killed race: the first and every
// fourth after it dies at the failpoint fp; of the rest, one in two is
// SIGKILLed within maxKill (in the long form, four in five within five
// times as long: its processes have more to do).
func hazard(i int, maxKill time.Duration, fp string) (time.Duration, string) {
	spared := rand.IntN(2) == 0
	if *tortureLong {
		spared, maxKill = rand.IntN(5) == 0, 5*maxKill
	}
	switch {
	case i%4 == 0:
		return 0, fp
	case !spared:
		return 1 + time.Duration(rand.Int64N(int64(maxKill))), ""
	}
	return 0, ""
}

// maxRounds bounds the rounds of one slot of a killed race: past it, the
// processes never got their work done.
const maxRounds = 400

// slot runs rounds of role (args dir, arg, "0") as who until one ends by
// itself; each round befalls what hazard says.
func (l *raceLog) slot(t *testing.T, dir, role, who, arg string, maxKill time.Duration, fp string) {
	for i := 0; i < maxRounds; i++ {
		kill, point := hazard(i, maxKill, fp)
		if !l.round(t, raceHelper(t, role, dir, arg, "0"), who, kill, point) {
			return
		}
	}
	t.Errorf("%s: still not done after %d rounds", who, maxRounds)
}

// TestClaimRace: 8 agents' processes claim from 100 ready tasks nobody is
// assigned, all at once, each finishing its task before it claims the
// next, until nothing is left: each task is claimed by exactly one of them
// and goes in progress for it, and all end done, none left to claim.
func TestClaimRace(t *testing.T) {
	n := 100
	if *tortureLong {
		n = 2000
	}
	s, cfg := raceProject(t, 0)
	var pool []string
	for i := 0; i < n; i++ {
		pool = append(pool, mustCreate(t, s, cfg, NewTask{Title: fmt.Sprintf("ready %d", i), Requester: "lead"}).ID)
	}
	dir := s.files.ProjectDir()
	os.WriteFile(filepath.Join(dir, raceClaimsEnd), nil, 0o644)
	log := &raceLog{}
	var wg sync.WaitGroup
	for _, a := range claimants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			log.round(t, raceHelper(t, "task-claimer", dir, a, "0"), a, 0, "")
		}()
	}
	ended := make(chan struct{})
	go func() { wg.Wait(); close(ended) }()
	for up := false; !up && log.readyCount() < len(claimants); {
		select { // all up: then they start at once
		case <-ended:
			up = true // one failed before it was up: the test fails
		case <-time.After(time.Millisecond):
		}
	}
	os.WriteFile(filepath.Join(dir, raceGo), nil, 0o644)
	<-ended
	claims := claimsOf(t, log)
	for _, id := range pool {
		if len(claims[id]) != 1 {
			t.Errorf("task %s claimed by %q, want exactly one claimant", id, claims[id])
		}
	}
	if len(claims) != n {
		t.Errorf("%d tasks claimed, want %d", len(claims), n)
	}
	checkClaimedDone(t, s, log, pool)
	checkNothingLeft(t, s, cfg)
	per := map[string]int{}
	for _, ln := range log.said("claimed") {
		per[ln.who]++
	}
	t.Logf("claims per agent: %v", per)
}

// claimsOf are the claimants each task was claimed by, as the processes
// printed them; each claim must have set the task in progress.
func claimsOf(t *testing.T, log *raceLog) map[string][]string {
	t.Helper()
	claims := map[string][]string{}
	for _, ln := range log.said("claimed") {
		id := ln.words[1]
		claims[id] = append(claims[id], ln.who)
		if len(ln.words) < 3 || ln.words[2] != StatusInProgress {
			t.Errorf("%s claimed %s: %q, want it in progress", ln.who, id, ln.words)
		}
	}
	return claims
}

// checkClaimedDone checks each task of ids: done, by its assignee, a
// claimant; claimed by one process at most, its own (a claim whose
// process was killed before it printed it is not printed); resumed, if at
// all, by it.
func checkClaimedDone(t *testing.T, s *Store, log *raceLog, ids []string) {
	t.Helper()
	claims := claimsOf(t, log)
	resumed := map[string][]string{}
	for _, ln := range log.said("resumed") {
		resumed[ln.words[1]] = append(resumed[ln.words[1]], ln.who)
	}
	for _, id := range ids {
		task, err := s.Task(id)
		if err != nil {
			t.Fatal(err)
		}
		if task.Status != StatusDone || !slices.Contains(claimants, task.Assignee) || task.StatusChangedBy != task.Assignee {
			t.Errorf("task %s: %s, assigned to %q, set by %q; want done by the claimant it is assigned to", id, task.Status, task.Assignee, task.StatusChangedBy)
		}
		if c := claims[id]; len(c) > 1 || (len(c) == 1 && c[0] != task.Assignee) {
			t.Errorf("task %s, assigned to %s, was claimed by %q", id, task.Assignee, c)
		}
		if r := resumed[id]; len(r) > 0 && slices.ContainsFunc(r, func(a string) bool { return a != task.Assignee }) {
			t.Errorf("task %s, assigned to %s, was resumed by %q", id, task.Assignee, r)
		}
	}
}

// checkNothingLeft checks that no task is left ready, waiting, or to
// claim by any claimant.
func checkNothingLeft(t *testing.T, s *Store, cfg *storage.Config) {
	t.Helper()
	ready, waiting, err := s.TaskCounts()
	if err != nil || ready != 0 || waiting != 0 {
		t.Errorf("TaskCounts: %d ready, %d waiting, %v; want none", ready, waiting, err)
	}
	for _, a := range claimants {
		if ids, err := s.claimableBy(cfg, a, false, 0); err != nil || len(ids) > 0 {
			t.Errorf("Claimable(%s) = %q, %v; want nothing left", a, ids, err)
		}
	}
}
