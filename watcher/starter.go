package watcher

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"aipm/fsstore"
	"aipm/internal/failpoint"
)

// starter starts agent commands for triggers (DESIGN section 12): at most
// max_concurrent at once, one per agent and purpose (claimed in runs/),
// with a cooldown after a failure. Only the daemon's loop goroutine calls
// it; each process's Wait runs in its own goroutine and reports on exited.
type starter struct {
	store    *fsstore.Store
	log      *slog.Logger
	running  map[string]*proc // agent.purpose -> process
	cooldown map[string]time.Time
	missing  map[string]bool // agents whose missing credential was reported
	// outcomes are the last outcomes of the runs this watcher started or
	// failed to start, by agent.purpose.
	outcomes map[string]fsstore.Outcome
	exited   chan exitNote
	stopping bool // stopAll signalled the processes: their exits are no failures
	// noRetry: a run that failed is not started again in this watcher's
	// life (aipm watch --until-idle, which then exits naming it), where a
	// watcher that runs on retries it after the cooldown.
	noRetry bool
}

type proc struct {
	run  fsstore.Run
	cmd  *exec.Cmd
	done chan struct{}
	// authenticated: a session of the run was seen (reactAuthDeadline
	// stops looking).
	authenticated bool
	// stoppedFor is why this watcher stopped the process before it ended
	// by itself ("" while it did not): its outcome says so.
	stoppedFor string
}

type exitNote struct {
	p   *proc
	err error
}

func newStarter(store *fsstore.Store, log *slog.Logger) *starter {
	return &starter{store: store, log: log, running: map[string]*proc{}, cooldown: map[string]time.Time{},
		missing: map[string]bool{}, outcomes: map[string]fsstore.Outcome{}, exited: make(chan exitNote, 16)}
}

func key(agent, purpose string) string { return agent + "." + purpose }

// owns says whether r is a process this starter started and still waits on.
func (st *starter) owns(r fsstore.Run) bool {
	p, ok := st.running[key(r.Agent, r.Purpose)]
	return ok && p.run.ID == r.ID
}

// start starts a's command for trigger t unless it runs already, the
// limit is reached, or the agent cools down after a failure; it returns
// when to try again (zero: no retry needed).
func (st *starter) start(ctx context.Context, cfg *fsstore.Config, a fsstore.Agent, t fsstore.Trigger) time.Time {
	k := key(t.Agent, t.Purpose)
	if st.running[k] != nil {
		return time.Time{}
	}
	if st.noRetry && st.outcomes[k].Failed() {
		return time.Time{}
	}
	if until := st.cooldown[k]; time.Now().Before(until) {
		return until
	}
	if len(st.running) >= cfg.Defaults.MaxConcurrent {
		return time.Time{} // an exit brings the next pass
	}
	cred, err := st.store.Startable(a)
	if err != nil {
		if !st.missing[a.ID] {
			st.missing[a.ID] = true
			st.log.Error("cannot start agent", "agent", a.ID, "err", err)
			st.record(ctx, cfg, fsstore.Outcome{Agent: a.ID, Purpose: t.Purpose, State: fsstore.OutcomeFailed,
				Problem: fmt.Sprintf("aipm watch cannot start %s for its %s work: %v", a.ID, t.Purpose, err)})
		}
		return time.Time{}
	}
	delete(st.missing, a.ID)
	now := time.Now().UTC()
	logPath, _ := st.store.Runs().LogPath(a.ID, t.Purpose, now)
	run := fsstore.Run{
		ID: fsstore.NewID("run_"), Agent: a.ID, Purpose: t.Purpose, Command: a.Command, Reason: t.Reason, StartedAt: now,
		Log: logPath,
	}
	claimed, stale, slot, err := st.store.Runs().Claim(ctx, run)
	if err != nil {
		st.log.Error("claim run", "agent", a.ID, "purpose", t.Purpose, "err", err)
		return time.Time{}
	}
	if !claimed {
		return time.Time{} // a live process holds it (a previous watcher's)
	}
	defer slot.Close() // the started process holds its own copy
	if stale != nil {
		st.store.Runs().EndStaleSessions(ctx, *stale)
	}
	if err := st.spawn(cfg, a, t, &run, cred, slot); err != nil {
		st.log.Error("agent start failed", "agent", a.ID, "purpose", t.Purpose, "err", err, "cooldown", cfg.Defaults.SpawnCooldown.Duration)
		st.store.Runs().Release(ctx, run)
		st.cooldown[k] = time.Now().Add(cfg.Defaults.SpawnCooldown.Duration)
		st.record(ctx, cfg, fsstore.Outcome{RunID: run.ID, Agent: a.ID, Purpose: t.Purpose, State: fsstore.OutcomeFailed, StartedAt: run.StartedAt,
			Log: st.store.Rel(run.Log), Problem: fmt.Sprintf("aipm watch could not start %s for its %s work: %v: fix %s's command (aipm agent set %s)", a.ID, t.Purpose, err, a.ID, a.ID)})
		return st.cooldown[k]
	}
	st.log.Info("agent started", "agent", a.ID, "purpose", t.Purpose, "pid", run.PID, "reason", t.Reason, "run", run.ID, "log", st.store.Rel(run.Log))
	return time.Time{}
}

// spawn starts a's command; the process inherits slot, the run's lock
// (fsstore RunTable.Claim), as its file descriptor 3.
func (st *starter) spawn(cfg *fsstore.Config, a fsstore.Agent, t fsstore.Trigger, run *fsstore.Run, cred string, slot *os.File) error {
	out, err := st.store.Runs().OpenLog(*run)
	if err != nil {
		return err
	}
	defer out.Close() // the child holds its own copy
	cmd := exec.Command(program(a.Command[0]), a.Command[1:]...)
	cmd.Dir = st.store.ProjectDir()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.ExtraFiles = []*os.File{slot}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its children are stopped with it
	// The watcher's own credential and identity never leak into an agent.
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case fsstore.EnvAgentID, fsstore.EnvPasskey, fsstore.EnvPasskeyFile, fsstore.EnvPurpose, fsstore.EnvRunID, "AIPM_AS":
			continue
		}
		env = append(env, kv)
	}
	for k, v := range a.Env {
		env = append(env, k+"="+v)
	}
	cmd.Env = append(env,
		fsstore.EnvAgentID+"="+a.ID,
		fsstore.EnvPasskeyFile+"="+cred,
		fsstore.EnvPurpose+"="+t.Purpose,
		fsstore.EnvProjectDir+"="+st.store.ProjectDir(),
		fsstore.EnvRunID+"="+run.ID,
		"AIPM_DIR="+st.store.ProjectDir(),
	)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %q: %w", a.Command[0], err)
	}
	failpoint.Kill("after-start")
	run.PID = cmd.Process.Pid
	p := &proc{run: *run, cmd: cmd, done: make(chan struct{})}
	st.running[key(a.ID, t.Purpose)] = p
	if err := st.store.Runs().SetPID(context.Background(), *run); err != nil {
		st.log.Error("record run pid", "run", run.ID, "err", err)
	}
	go func() {
		err := cmd.Wait()
		close(p.done)
		st.exited <- exitNote{p: p, err: err}
	}()
	return nil
}

// finished handles a process's exit: its run record goes, its sessions
// end, its outcome is recorded (and told to its human when it is a
// problem), and a failure (a non-zero exit, an exit that left its trigger
// untaken, a stop for never authenticating) starts the cooldown.
func (st *starter) finished(ctx context.Context, cfg *fsstore.Config, n exitNote) {
	r := n.p.run
	k := key(r.Agent, r.Purpose)
	if st.running[k] == n.p {
		delete(st.running, k)
	}
	if err := st.store.Runs().Release(ctx, r); err != nil {
		st.log.Error("release run", "run", r.ID, "err", err)
	}
	o := st.outcome(cfg, n)
	if o.State == fsstore.OutcomeStopped {
		st.log.Info("agent stopped", "agent", r.Agent, "purpose", r.Purpose, "pid", r.PID)
	}
	o = st.record(ctx, cfg, o)
	if !o.Failed() {
		delete(st.cooldown, k)
		if o.State == fsstore.OutcomeWorked {
			st.log.Info("agent exited", "agent", r.Agent, "purpose", r.Purpose, "pid", r.PID)
		}
		return
	}
	st.cooldown[k] = time.Now().Add(cfg.Defaults.SpawnCooldown.Duration)
	st.log.Warn("agent process failed", "agent", r.Agent, "purpose", r.Purpose, "pid", r.PID, "why", o.State,
		"problem", o.Problem, "cooldown", cfg.Defaults.SpawnCooldown.Duration, "log", o.Log)
}

// outcome is how the process of n ended, in one sentence with the fix
// when it is a problem: what the human reads in the inbox, aipm status
// and on the board.
func (st *starter) outcome(cfg *fsstore.Config, n exitNote) fsstore.Outcome {
	r := n.p.run
	o := fsstore.Outcome{RunID: r.ID, Agent: r.Agent, Purpose: r.Purpose, StartedAt: r.StartedAt, EndedAt: time.Now().UTC(),
		Log: st.store.Rel(r.Log), LogLine: fsstore.LastLogLine(r.Log)}
	ends := "its log is empty"
	if o.LogLine != "" {
		ends = fmt.Sprintf("its log ends %q", o.LogLine)
	}
	run := fmt.Sprintf("%s's %s run", r.Agent, r.Purpose)
	switch {
	case n.p.stoppedFor != "":
		o.State = fsstore.OutcomeNoAuth
		o.Problem = fmt.Sprintf("%s %s, so aipm watch stopped it; %s (%s): check that its client reaches its model and is logged in (aipm doctor checks both), "+
			"or allow longer with [defaults] authenticate_within", run, n.p.stoppedFor, ends, o.Log)
	case st.stopping:
		o.State = fsstore.OutcomeStopped
	case n.err != nil:
		o.State = fsstore.OutcomeFailed
		o.Problem = fmt.Sprintf("%s failed (%v); %s (%s): fix what it says and aipm watch starts it again", run, n.err, ends, o.Log)
	case st.store.Triggers().Untaken(r.Agent, r.Purpose, r.StartedAt):
		o.State = fsstore.OutcomeNoWork
		o.Problem = fmt.Sprintf("%s exited without working: it never authenticated with aipm, so its %s work remains; %s (%s): "+
			"a client that started without aipm's tools, or a command that is not an aipm client, ends so", run, r.Purpose, ends, o.Log)
	default:
		o.State = fsstore.OutcomeWorked
	}
	return o
}

// record records o (fsstore RecordOutcome, which tells the human once)
// and keeps it for --until-idle; a failure to record is logged.
func (st *starter) record(ctx context.Context, cfg *fsstore.Config, o fsstore.Outcome) fsstore.Outcome {
	got, err := st.store.Runs().RecordOutcome(ctx, cfg, o)
	if err != nil {
		st.log.Error("run outcome", "agent", o.Agent, "purpose", o.Purpose, "err", err)
		if got.State == "" {
			got = o
		}
	}
	st.outcomes[key(o.Agent, o.Purpose)] = got
	return got
}

// authenticated says whether the run of p has authenticated: a live
// session carries its run id, or the trigger it was started for is taken.
func (st *starter) authenticated(p *proc, live []fsstore.Session) bool {
	for _, s := range live {
		if s.RunID == p.run.ID {
			return true
		}
	}
	return !st.store.Triggers().Untaken(p.run.Agent, p.run.Purpose, p.run.StartedAt)
}

// stopUnauthenticated stops p's process group, which has not
// authenticated within within: SIGTERM, and SIGKILL after a grace period
// if it is still there.
func (st *starter) stopUnauthenticated(p *proc, within time.Duration) {
	p.stoppedFor = fmt.Sprintf("had not authenticated within %s (its first tool call, authenticate, never came)", within)
	st.log.Warn("agent never authenticated; stopping it", "agent", p.run.Agent, "purpose", p.run.Purpose, "pid", p.run.PID, "within", within)
	syscall.Kill(-p.run.PID, syscall.SIGTERM)
	go func() {
		select {
		case <-p.done:
		case <-time.After(stopGrace):
			syscall.Kill(-p.run.PID, syscall.SIGKILL)
		}
	}()
}

// stopGrace is how long a process stopped by the watcher has to end after
// SIGTERM before it is killed.
const stopGrace = 5 * time.Second

// unfinished are the problems of the runs that failed in this watcher's
// life and whose work is still waiting (their trigger pending): what
// aipm watch --until-idle exits non-zero for.
func (st *starter) unfinished() []fsstore.Outcome {
	var out []fsstore.Outcome
	for _, o := range st.outcomes {
		if o.Failed() && st.store.Triggers().Untaken(o.Agent, o.Purpose, time.Now()) {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b fsstore.Outcome) int {
		return strings.Compare(key(a.Agent, a.Purpose), key(b.Agent, b.Purpose))
	})
	return out
}

// stopAll signals every started process group (SIGTERM), waits up to
// bound, kills what is left, and releases their runs.
func (st *starter) stopAll(ctx context.Context, cfg *fsstore.Config, bound time.Duration) {
	st.stopping = true
	for _, p := range st.running {
		syscall.Kill(-p.run.PID, syscall.SIGTERM)
	}
	deadline := time.After(bound)
	for len(st.running) > 0 {
		select {
		case n := <-st.exited:
			st.finished(ctx, cfg, n)
		case <-deadline:
			for _, p := range st.running {
				st.log.Warn("agent did not stop; killing it", "agent", p.run.Agent, "pid", p.run.PID)
				syscall.Kill(-p.run.PID, syscall.SIGKILL)
			}
			deadline = nil
		}
	}
}

// program is the executable of a command's first word: "aipm" is this
// watcher's own binary (aipm launch, aipm sim), so that an agent runs the
// aipm that watches its project, also when none is on PATH (go run); any
// other word is looked up on PATH as usual.
func program(word string) string {
	if word == "aipm" {
		if exe, err := os.Executable(); err == nil {
			return exe
		}
	}
	return word
}
