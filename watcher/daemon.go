package watcher

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"aipm/fsstore"
)

// Daemon is aipm watch: it watches .ai-pm/ and runs the reactions on every
// change, at every deadline, and whenever a process it started exits.
type Daemon struct {
	store   *fsstore.Store
	log     *slog.Logger
	cfg     *fsstore.Config
	starter *starter
	once    bool
	// tasks is the view of the last pass (what a hand edit changed); bad
	// holds the invalid files already reported.
	tasks map[string]fsstore.Task
	bad   map[string]string
	// cycles are the dependency cycles already told (reactFlow);
	// cyclesLooked says this watcher has looked for them once.
	cycles       map[string]bool
	cyclesLooked bool
	// claims are the queued tasks an agent was started to claim, and when
	// (claimTaken).
	claims map[string]time.Time
	// compacted is when reactCompaction last compacted (watcher/compact.go).
	compacted time.Time
	// Coalesce is how long a pass waits after the first event of a burst
	// for the rest of it.
	Coalesce time.Duration
	// StopBound is how long a stop waits for started processes to exit
	// after SIGTERM before killing them.
	StopBound time.Duration
	// Passes, when set, receives the number of each finished pass (tests
	// and the demo wait on it).
	Passes chan<- int
	// UntilIdle makes Run return once a pass leaves no agent process of
	// its own running (aipm watch --until-idle: scripts, a first try):
	// nil when no work is left that a started agent could take, an
	// *UnfinishedError when the work of a run that failed remains.
	UntilIdle bool
}

// New returns the watcher of store, logging to log.
func New(store *fsstore.Store, log *slog.Logger) *Daemon {
	return &Daemon{store: store, log: log, starter: newStarter(store, log), tasks: map[string]fsstore.Task{},
		bad: map[string]string{}, cycles: map[string]bool{}, claims: map[string]time.Time{}, Coalesce: 500 * time.Microsecond, StopBound: 5 * time.Second}
}

// Once runs one reconcile pass (triggers, interrupts, deadlines; it starts
// no process) and returns. It takes the watcher lock, so it refuses while
// a watcher runs.
func (d *Daemon) Once(ctx context.Context) error {
	release, err := d.store.LockWatcher()
	if err != nil {
		return err
	}
	defer release()
	d.once = true
	if err := d.loadConfig(); err != nil {
		return err
	}
	_, err = d.pass(ctx)
	return err
}

// Run watches until ctx ends, then stops the processes it started (SIGTERM,
// then SIGKILL after StopBound) and returns nil.
func (d *Daemon) Run(ctx context.Context) error {
	release, err := d.store.LockWatcher()
	if err != nil {
		return err
	}
	defer release()
	if err := d.loadConfig(); err != nil {
		return err
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("aipm watch needs inotify (raise fs.inotify.max_user_instances): %w", err)
	}
	defer fsw.Close()
	if err := d.watchTree(fsw, d.store.Root()); err != nil {
		return err
	}
	d.log.Info("watching", "project", d.store.ProjectDir(), "pid", os.Getpid())
	defer func() {
		d.starter.stopAll(context.Background(), d.cfg, d.StopBound)
		d.log.Info("stopped")
	}()

	d.starter.noRetry = d.UntilIdle
	l := &loop{d: d, ctx: ctx}
	l.runPass()
	for {
		if d.UntilIdle && len(d.starter.running) == 0 {
			if left := d.starter.unfinished(); len(left) > 0 {
				return &UnfinishedError{Runs: left}
			}
			d.log.Info("idle: no agent runs and none has work to start")
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fsw.Events:
			if !ok {
				return errors.New("fsnotify closed")
			}
			l.event(fsw, ev)
		case err, ok := <-fsw.Errors:
			if !ok {
				return errors.New("fsnotify closed")
			}
			l.watchError(fsw, err)
		case <-l.burst:
			l.runPass()
		case <-l.deadlineC():
			l.deadline = nil
			l.runPass()
		case note := <-d.starter.exited:
			d.starter.finished(ctx, d.cfg, note)
			l.runPass()
		}
	}
}

// UnfinishedError is what Run returns under UntilIdle when no agent
// runs but work remains for agents whose runs failed: not idle, since
// nobody will take that work until someone fixes what stopped them.
type UnfinishedError struct {
	Runs []fsstore.Outcome // the last outcome of each, a problem
}

func (e *UnfinishedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "watch: not idle: the work of %d agent run(s) remains and nothing will take it until it is fixed: ", len(e.Runs))
	for i, o := range e.Runs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(o.Problem)
	}
	return b.String()
}

// loop is the state of Run's event loop: a burst of events coalesces into
// one pass, and the earliest deadline a pass asked for starts another.
type loop struct {
	d        *Daemon
	ctx      context.Context
	burst    <-chan time.Time // armed by the first event of a burst
	deadline *time.Timer
	n        int // passes run
}

// runPass runs every reaction once and arms the deadline it asks for.
func (l *loop) runPass() {
	l.burst = nil
	l.n++
	due, err := l.d.pass(l.ctx)
	if err != nil && l.ctx.Err() == nil {
		l.d.log.Error("pass", "err", err)
		due = time.Now().Add(time.Second) // try again
	}
	if l.deadline != nil {
		l.deadline.Stop()
		l.deadline = nil
	}
	if !due.IsZero() {
		l.deadline = time.NewTimer(max(0, time.Until(due)) + time.Millisecond)
	}
	if l.d.Passes != nil {
		select {
		case l.d.Passes <- l.n:
		default:
		}
	}
}

func (l *loop) deadlineC() <-chan time.Time {
	if l.deadline == nil {
		return nil
	}
	return l.deadline.C
}

// event takes one file change: a new directory is watched, a config edit
// reloads the config, and the burst's pass is armed.
func (l *loop) event(fsw *fsnotify.Watcher, ev fsnotify.Event) {
	d := l.d
	if !d.relevant(ev) {
		return
	}
	if ev.Has(fsnotify.Create) {
		if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
			d.watchTree(fsw, ev.Name) // a new directory: watch it and what it already holds
		}
	}
	if ev.Name == d.store.ConfigPath() {
		d.reloadConfig()
	}
	if l.burst == nil {
		l.burst = time.After(d.Coalesce)
	}
}

// watchError takes an error of the fsnotify watcher: after lost events,
// everything is looked at again.
func (l *loop) watchError(fsw *fsnotify.Watcher, err error) {
	d := l.d
	if !errors.Is(err, fsnotify.ErrEventOverflow) {
		d.log.Error("fsnotify", "err", err)
		return
	}
	d.log.Warn("inotify queue overflowed: rescanning everything", "fix", "raise fs.inotify.max_queued_events")
	d.watchTree(fsw, d.store.Root())
	d.reloadConfig()
	l.runPass()
}

// relevant filters out what never changes a reaction (the store's
// QuietChange): the started processes' output, lock files and temporary
// files.
func (d *Daemon) relevant(ev fsnotify.Event) bool { return !d.store.QuietChange(ev.Name) }

// watchTree adds dir and every directory below it (but logs/) to fsw. An
// inotify limit is reported, not fatal: the deadline passes still run.
func (d *Daemon) watchTree(fsw *fsnotify.Watcher, dir string) error {
	return filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || !e.IsDir() {
			return nil
		}
		if d.store.UnwatchedDir(path) {
			return filepath.SkipDir
		}
		if err := fsw.Add(path); err != nil {
			d.log.Error("cannot watch directory", "dir", d.store.Rel(path), "err", err, "fix", "raise fs.inotify.max_user_watches")
		}
		return nil
	})
}

func (d *Daemon) loadConfig() error {
	cfg, err := d.store.LoadConfig()
	if err != nil {
		return err
	}
	d.adopt(cfg)
	return nil
}

// reloadConfig reads config.toml again; an invalid one keeps the config in
// force and is logged as config.toml:LINE: error.
func (d *Daemon) reloadConfig() {
	cfg, err := d.store.LoadConfig()
	if err == nil {
		err = fsstore.Adopt(d.cfg, cfg)
	}
	if err != nil {
		d.log.Error("config not reloaded; keeping the previous one", "err", err)
		return
	}
	d.adopt(cfg)
	d.log.Info("config reloaded", "agents", len(cfg.Agents))
}

// adopt puts cfg in force, logging each warning it has that the config
// it replaces had not (an unknown key is said once, not at every save).
func (d *Daemon) adopt(cfg *fsstore.Config) {
	for _, w := range fsstore.NewWarnings(d.cfg, cfg) {
		d.log.Warn("config: " + w.Error())
	}
	d.cfg = cfg
}

// pass runs every reaction once over the files as they are now and returns
// the earliest deadline the reactions asked for.
func (d *Daemon) pass(ctx context.Context) (time.Time, error) {
	p := &Pass{Ctx: ctx, Cfg: d.cfg, Now: time.Now().UTC()}
	if err := d.loadTasks(p); err != nil {
		return time.Time{}, err
	}
	var errs []error
	for _, r := range reactions {
		if err := r.Run(d, p); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.Name, err))
		}
	}
	view := make(map[string]fsstore.Task, len(p.Tasks))
	for _, t := range p.Tasks {
		view[t.ID] = t
	}
	d.tasks = view
	return p.due, errors.Join(errs...)
}
