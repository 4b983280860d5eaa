package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"aipm/fsstore"
	"aipm/watcher"
)

type demoOptions struct {
	e    *env
	Keep bool
}

func newCmdDemo(e *env, runF func(*demoOptions) error) *cobra.Command {
	o := &demoOptions{e: e}
	c := &cobra.Command{
		Use:   "demo [--keep]",
		Short: "Run the whole system on a throw-away project: a human, two simulated agents, the watcher",
		Long: `Create a project in a temporary directory with a human (lead) and two
simulated AI agents (coder and reviewer, whose command is aipm sim), start the
watcher, and drive a scenario while printing a live transcript:
  1. lead sets a task in progress for coder whose description delegates
     "6-round shiritori with reviewer, start with りんご": the watcher starts
     coder's task session, which delegates the talk to coder's chat session
     and waits; the watcher starts coder's chat session, which starts a
     conversation with reviewer (started by the watcher too); they play in
     kana until max_turns; coder's chat session reports the delegation
     completed; the task session wakes and reports the task done;
  2. lead sets a long task in progress: the watcher starts coder's task
     session; lead then edits the task file by hand (an editor-style rename)
     to blocked: the watcher interrupts coder, which reports blocked.
Every aipm command is printed as a line that pastes into a shell; "watch |"
lines are the watcher's log, "chat |" lines the messages as they are
written, "state |" lines each change of a task's or delegation's state. A summary of the files ends it. --keep leaves the project to explore.
No model and no network are involved; it takes a few seconds.`,
		Example: "  aipm demo\n  aipm demo --keep",
		Args:    argsNone,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(o)
			}
			return demoRun(cmd, o)
		},
	}
	c.Flags().BoolVar(&o.Keep, "keep", false, "keep the demo project and print its path")
	return c
}

// demoWait bounds each wait of the demo for the agents.
const demoWait = 60 * time.Second

// demo is one run of the demo scenario.
type demo struct {
	ctx   context.Context
	e     *env
	dir   string
	mu    sync.Mutex // serialises output lines
	store *fsstore.Store
}

func (d *demo) printf(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.e.stdout, format, args...)
}

// aipm runs one CLI command on the demo project, printed first as a line
// that pastes into a shell; its output is returned as well as printed.
func (d *demo) aipm(argv ...string) (string, error) {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = shellQuote(a)
	}
	var out strings.Builder
	getenv := func(k string) string {
		if k == "AIPM_AS" || k == "AIPM_DIR" {
			return "" // the demo project has one human, who is the actor
		}
		return d.e.getenv(k)
	}
	err := run(d.ctx, append([]string{"--dir", d.dir}, argv...), getenv, nil, &out, d.e.stderr)
	d.printf("\n$ aipm %s\n%s", strings.Join(quoted, " "), out.String())
	return out.String(), err
}

func demoRun(cmd *cobra.Command, o *demoOptions) error {
	exe, err := selfExe()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "aipm-demo-*")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if !o.Keep {
		defer os.RemoveAll(dir)
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	d := &demo{ctx: ctx, e: o.e, dir: dir}
	if err := d.setUp(exe + " sim"); err != nil {
		return err
	}

	// The watcher, in this process, logging into the transcript.
	w := watcher.New(d.store, slog.New(&demoLog{d: d}))
	wctx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan error, 1)
	go func() { watchDone <- w.Run(wctx) }()
	defer func() {
		stopWatch()
		<-watchDone
	}()
	stopChat := d.followChat(ctx)
	stopState := d.followState(ctx)
	d.printf("\n# aipm watch is running (here in the demo's process)\n")

	if err := d.delegatedShiritori(); err != nil {
		return err
	}
	if err := d.handEditInterrupts(); err != nil {
		return err
	}
	stopChat()
	stopState()
	if err := d.summary(); err != nil {
		return err
	}
	if o.Keep {
		d.printf("\nthe demo project is in %s (%s holds its state)\n", dir, fsstore.DirName)
	}
	return nil
}

// setUp makes the demo's project: a human lead and two simulated agents
// the watcher starts with simCommand, with short timeouts so that idle
// agents exit within the demo.
func (d *demo) setUp(simCommand string) error {
	for _, argv := range [][]string{
		{"init", "--name", "demo"},
		{"agent", "add", "lead", "--type", "human", "--role", "manager", "--name", "Project Lead"},
		{"agent", "add", "coder", "--type", "ai", "--parent", "lead", "--command", simCommand, "--save-passkey"},
		{"agent", "add", "reviewer", "--type", "ai", "--parent", "lead", "--command", simCommand, "--save-passkey"},
	} {
		if _, err := d.aipm(argv...); err != nil {
			return err
		}
	}
	var err error
	if d.store, err = fsstore.Open(d.dir); err != nil {
		return err
	}
	if err := demoDefaults(d.ctx, d.store, "chat_idle_timeout = \"1s\"\nwait_seconds = 1\nspawn_cooldown = \"2s\"\n"); err != nil {
		return err
	}
	d.printf("\n# config.toml [defaults]: chat_idle_timeout = \"1s\", wait_seconds = 1 (idle agents exit quickly)\n")
	return nil
}

// startTask adds a task for coder and sets it in progress, returning its id.
func (d *demo) startTask(title, description string) (string, error) {
	out, err := d.aipm("task", "add", title, "--assignee", "coder", "--description", description)
	if err != nil {
		return "", err
	}
	id := taskIDRE().FindString(out)
	if id == "" {
		return "", fmt.Errorf("demo: task add printed no task id: %q", out)
	}
	_, err = d.aipm("task", "status", id, "in_progress")
	return id, err
}

// delegatedShiritori is seed 002: a task whose session delegates a
// shiritori conversation to the same agent's chat session.
func (d *demo) delegatedShiritori() error {
	id, err := d.startTask("Play shiritori with reviewer", "delegate: reviewer: 6-round shiritori with reviewer, start with りんご")
	if err != nil {
		return err
	}
	return d.until("the delegated shiritori to end, the task to be done and every agent to exit", func() bool {
		t, err := d.store.Task(id)
		runs, _ := d.store.Runs().List()
		return err == nil && t.Status == fsstore.StatusDone && len(runs) == 0
	})
}

// handEditInterrupts is seed 004: a task in progress starts coder's task
// session; a hand edit of the task file to blocked interrupts it.
func (d *demo) handEditInterrupts() error {
	id, err := d.startTask("Write the release notes", "A long job (sim-steps=100000).")
	if err != nil {
		return err
	}
	if err := d.until("coder's task session", func() bool {
		live, _ := d.store.LiveSessions(time.Now())
		return slices.ContainsFunc(live, func(s fsstore.Session) bool { return s.Agent == "coder" && s.TaskID == id })
	}); err != nil {
		return err
	}
	d.printf("\n# lead opens .ai-pm/tasks/%s.json in an editor, sets \"status\": \"blocked\" and saves (write a new file, rename it over the old)\n", id)
	if err := demoHandEdit(d.store, id, fsstore.StatusBlocked); err != nil {
		return err
	}
	return d.until("coder to report blocked and exit", func() bool {
		t, err := d.store.Task(id)
		runs, _ := d.store.Runs().List()
		return err == nil && t.Result == "blocked" && len(runs) == 0
	})
}

// summary prints the state the demo left: status, tasks, delegations,
// coder's chat log, the conversations and the files.
func (d *demo) summary() error {
	d.printf("\n# summary\n")
	for _, argv := range [][]string{{"status"}, {"task", "list"}, {"delegations", "--all"}, {"log", "coder"}} {
		if _, err := d.aipm(argv...); err != nil {
			return err
		}
	}
	convs, _ := d.store.Conversations().List(d.ctx, mustConfig(d.store), true)
	for _, c := range convs {
		d.printf("\nconversation %s: %s → %s, %s after %d turns (%s)\n", c.ID, c.Initiator, c.Participant, c.State, c.Turns, c.EndReason)
	}
	d.printf("\nfiles under %s:\n", fsstore.DirName)
	filepath.WalkDir(d.store.Root(), func(path string, de os.DirEntry, err error) error {
		if err == nil && !de.IsDir() && !strings.HasSuffix(path, ".lock") {
			d.printf("  %s\n", d.store.Rel(path))
		}
		return nil
	})
	return nil
}

func mustConfig(s *fsstore.Store) *fsstore.Config {
	cfg, err := s.LoadConfig()
	if err != nil {
		return &fsstore.Config{}
	}
	return cfg
}

// taskIDRE is compiled when first used, not at every aipm start.
var taskIDRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`tsk_[0-9A-Z]+`) })

// until waits for cond, checking every few milliseconds, up to demoWait.
func (d *demo) until(what string, cond func() bool) error {
	deadline := time.Now().Add(demoWait)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("demo: gave up waiting for %s after %s: see %s/logs/", what, demoWait, d.store.Root())
		}
		select {
		case <-d.ctx.Done():
			return d.ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// followChat prints every message as it is written (each once: from its
// receiver's copy), until the returned function is called.
func (d *demo) followChat(ctx context.Context) (stop func()) {
	agents := []string{"lead", "coder", "reviewer"}
	cursors := map[string]fsstore.Cursor{}
	type line struct {
		at       time.Time
		from, to string
		content  string
	}
	poll := func() {
		var lines []line
		for _, a := range agents {
			msgs, cur, _, err := d.store.Follow(a, cursors[a])
			if err != nil {
				continue
			}
			cursors[a] = cur
			for _, m := range msgs {
				if m.ReceiverID == "" { // the receiver's copy
					at, _ := time.Parse(time.RFC3339Nano, m.CreatedAt)
					lines = append(lines, line{at, m.SenderID, a, m.Content})
				}
			}
		}
		// In the order written, whoever received them.
		slices.SortStableFunc(lines, func(x, y line) int { return x.at.Compare(y.at) })
		for _, l := range lines {
			d.printf("  chat  | %s → %s: %s\n", l.from, l.to, l.content)
		}
	}
	return pollUntilStopped(ctx, poll)
}

// pollUntilStopped runs poll every 10 ms until the returned function is
// called, then once more, so that nothing written before the stop is missed.
func pollUntilStopped(ctx context.Context, poll func()) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			poll()
			select {
			case <-ctx.Done():
				poll()
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// followState prints each change of a task's or a delegation's state as
// it is seen (polled every few milliseconds), until the returned function
// is called.
func (d *demo) followState(ctx context.Context) (stop func()) {
	seen := map[string]string{}
	poll := func() {
		tasks, _, _, _ := d.store.Tasks(fsstore.TaskFilter{})
		for _, t := range tasks {
			if seen[t.ID] == t.Status {
				continue
			}
			seen[t.ID] = t.Status
			if t.Status == fsstore.StatusDone && t.Summary != "" {
				d.printf("  state | task %s (%s) is done: %s\n", t.ID, t.Assignee, t.Summary)
				continue
			}
			d.printf("  state | task %s (%s) is %s\n", t.ID, t.Assignee, t.Status)
		}
		dlgs, _ := d.store.Delegations().List(fsstore.DelegationFilter{})
		for _, g := range dlgs {
			if seen[g.ID] == g.Status {
				continue
			}
			seen[g.ID] = g.Status
			switch g.Status {
			case fsstore.DlgPending:
				d.printf("  state | delegation %s is pending: %s's task session asks its chat session: %q with %s\n", g.ID, g.Agent, g.Purpose, g.Target)
			case fsstore.DlgProcessing:
				d.printf("  state | delegation %s is processing (%s's chat session took it)\n", g.ID, g.Agent)
			default:
				d.printf("  state | delegation %s is %s: %s\n", g.ID, g.Status, g.Result)
			}
		}
	}
	return pollUntilStopped(ctx, poll)
}

// demoDefaults adds keys to the [defaults] table of the demo's config.
func demoDefaults(ctx context.Context, s *fsstore.Store, keys string) error {
	return s.EditConfig(ctx, func(text []byte, _ *fsstore.Config) ([]byte, error) {
		return []byte(strings.Replace(string(text), "[defaults]\n", "[defaults]\n"+keys, 1)), nil
	})
}

// demoHandEdit changes a task's status the way a human's editor does:
// a new file renamed over the old one, with no lock and no aipm.
func demoHandEdit(s *fsstore.Store, id, status string) error {
	return fsstore.FixturesOf(s).HandEdit(fsstore.Tasks, id, func(fields map[string]any) { fields["status"] = status })
}

// demoLog prints the watcher's log lines into the transcript.
type demoLog struct {
	d     *demo
	attrs []slog.Attr
}

func (h *demoLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h *demoLog) WithAttrs(as []slog.Attr) slog.Handler {
	return &demoLog{d: h.d, attrs: append(append([]slog.Attr{}, h.attrs...), as...)}
}
func (h *demoLog) WithGroup(string) slog.Handler { return h }
func (h *demoLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "watching" || r.Message == "stopped" {
		return nil
	}
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "run", "log", "task":
			if a.Value.String() == "" || a.Key != "task" {
				return true
			}
		}
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.d.printf("  watch | %s\n", b.String())
	return nil
}

// selfExe is the path of this aipm binary, for the agents' command: argv[0]
// as run (so a test harness that dispatches on the program's name works),
// else the executable.
func selfExe() (string, error) {
	if p, err := exec.LookPath(os.Args[0]); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs, nil
		}
	}
	p, err := os.Executable()
	if err != nil {
		return "", errors.New("demo: cannot find the aipm executable: " + err.Error())
	}
	return p, nil
}
