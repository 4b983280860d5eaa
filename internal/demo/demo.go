// Package demo is aipm demo: a throw-away project with a human and
// simulated agents (aipm sim) that a watcher in this process starts, a
// scenario driven through aipm's own commands, and a live transcript of
// what happens (the commands as they paste into a shell, the watcher's log,
// the messages, each change of a task's or delegation's state, each idea
// explained once). It needs the aipm command tree to run its commands
// (Options.CLI) and the aipm binary the agents run (Options.Exe).
//
//   - demo.go: the run, its default scenario and the transcript.
//   - group.go: the group scenario (--scenario group).
package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"aipm/fsstore"
	"aipm/internal/fixtures"
	"aipm/internal/shell"
	"aipm/watcher"
	"aipm/web"
)

// demoWait bounds each wait of the demo for the agents.
const demoWait = 60 * time.Second

// demo is one run of the demo scenario.
type demo struct {
	ctx   context.Context
	o     Options
	dir   string
	lang  string
	game  demoGame
	mu    sync.Mutex // serialises output lines
	store *fsstore.Store
	told  map[string]bool // the ideas explained so far
}

// demoGame is the word game the agents play, in one language.
type demoGame struct {
	title, purpose, rules string
}

var demoGames = map[string]demoGame{
	"en": {
		title:   "Play a word chain with reviewer",
		purpose: "6-round word chain with reviewer, start with apple",
		rules:   "the game: a word chain, each word starting with the last letter of the one before, no word twice",
	},
	"ja": {
		title:   "Play shiritori with reviewer",
		purpose: "6-round shiritori with reviewer, start with りんご",
		rules:   "the game: shiritori (しりとり), the Japanese word chain in kana: each word starts with the last kana of the one before; a word ending in ん loses",
	},
}

// passkeyRE finds a passkey in what the demo is about to print.
var passkeyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`aipk_[A-Za-z0-9_-]+`) })

// printf prints to the transcript; a passkey never reaches it.
func (d *demo) printf(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	io.WriteString(d.o.Stdout, passkeyRE().ReplaceAllString(fmt.Sprintf(format, args...), "aipk_… (not shown)"))
}

// paint wraps s in an ANSI SGR code when colour is on.
func (d *demo) paint(code, s string) string {
	if !d.o.Colour || code == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// demoIdeas are the one-line explanations of what the transcript shows,
// each printed the first time it appears.
var demoIdeas = map[string]string{
	"watcher":      "the watcher (aipm watch) follows .ai-pm/ and starts an agent's command (config.toml) when the agent has work; here it runs inside the demo's process",
	"task session": "a task session is an agent process started for one task in progress: it works on that task, reports it done or blocked, and exits",
	"chat session": "a chat session is an agent process started to talk: it reads and answers messages and carries out delegations, and exits when idle",
	"delegation":   "a delegation is a task session asking its own agent's chat session to do some talking for it; the task session waits for its result",
	"conversation": "a conversation is a bounded exchange of turns between two AI agents: one starts it, the other is started to answer, and it ends at max_turns",
	"interrupt":    "an interrupt is a stop order: the agent's next tool call is answered with it instead, and the agent stops and reports",
	"notification": "a notification is a line in an agent's notifications log, read at its next call (an interrupt arrives as one)",
}

// explain prints the explanation of an idea the first time it is named;
// the caller holds no lock.
func (d *demo) explain(ideas ...string) {
	for _, idea := range ideas {
		d.mu.Lock()
		told := d.told[idea]
		d.told[idea] = true
		d.mu.Unlock()
		if !told {
			d.printf("%s\n", d.paint("36", "# "+demoIdeas[idea]))
		}
	}
}

// note prints a comment line of the transcript.
func (d *demo) note(format string, args ...any) {
	d.printf("\n%s\n", d.paint("2", "# "+fmt.Sprintf(format, args...)))
}

// aipm runs one CLI command on the demo project, printed first as a line
// that pastes into a shell; its output is returned as well as printed.
func (d *demo) aipm(argv ...string) (string, error) {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = shell.Quote(a)
	}
	var out strings.Builder
	getenv := func(k string) string {
		if k == "AIPM_AS" || k == "AIPM_DIR" {
			return "" // the demo project has one human, who is the actor
		}
		return d.o.Getenv(k)
	}
	err := d.o.CLI(d.ctx, append([]string{"--dir", d.dir}, argv...), getenv, &out, d.o.Stderr)
	d.printf("\n%s\n%s", d.paint("1", "$ aipm "+strings.Join(quoted, " ")), out.String())
	return out.String(), err
}

// Options are one run of the demo: what its flags say, the aipm binary
// the agents run (Exe), how it runs an aipm command in this process (CLI,
// the whole command tree), and the process's environment and streams.
type Options struct {
	Lang     string // en or ja
	Scenario string // default or group
	Remove   bool   // remove the project when the demo succeeded
	Web      bool   // serve the live board, until ctx ends
	Exe      string
	CLI      func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error
	Getenv   func(string) string
	Colour   bool // ANSI colours in the transcript
	Stdout   io.Writer
	Stderr   io.Writer
}

// Check says what is wrong with the language or the scenario, in one
// sentence.
func Check(lang, scenario string) error {
	if _, ok := demoGames[lang]; !ok {
		return fmt.Errorf("demo: --lang must be en or ja, not %q", lang)
	}
	if _, ok := demoScenario(scenario); !ok {
		return fmt.Errorf("demo: --scenario must be default or group, not %q", scenario)
	}
	return nil
}

// Run runs the demo: aipm demo.
func Run(ctx context.Context, o Options) (err error) {
	if err := Check(o.Lang, o.Scenario); err != nil {
		return err
	}
	game := demoGames[o.Lang]
	scenario, _ := demoScenario(o.Scenario)
	exe := o.Exe
	onPath, restore, err := aipmOnPath(exe)
	if err != nil {
		return err
	}
	defer restore()
	dir, err := os.MkdirTemp("", "aipm-demo-*")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer func() {
		if o.Remove && err == nil {
			os.RemoveAll(dir) // a failed demo stays, for its logs
		}
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d := &demo{ctx: ctx, o: o, dir: dir, lang: o.Lang, game: game, told: map[string]bool{}}
	if err := d.setUp("aipm sim"); err != nil {
		return err
	}
	if o.Scenario == "group" {
		if err := d.groupSetUp(); err != nil {
			return err
		}
	}
	var board *web.Server
	if o.Web {
		if board, err = web.Start(ctx, d.store, web.Options{}); err != nil {
			return err
		}
		d.printf("the live board of this demo: %s\n", board.URL())
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
	d.note("aipm watch is running")
	d.explain("watcher")

	if err := scenario(d); err != nil {
		return err
	}
	stopChat()
	stopState()
	if err := d.summary(); err != nil {
		return err
	}
	if !o.Remove {
		d.printf("\nthe demo project is in %s (%s holds its state)\n", dir, fsstore.DirName)
	}
	d.tryNext(dir, aipmWord(exe, onPath), !o.Remove)
	if board != nil {
		d.printf("\nthe board stays at %s until Ctrl-C\n", board.URL())
		<-ctx.Done()
		board.Wait()
	}
	return nil
}

// tryNext is the closing block: where to go from the demo, each step a
// command that works where the user stands (aipm is the word that runs
// this aipm there: "go run ./cmd/aipm" before it is installed).
func (d *demo) tryNext(dir, aipm string, kept bool) {
	d.printf("\n%s\n", d.paint("1", "try next"))
	team := aipm + " --dir ~/myteam "
	lines := []string{
		"• a team of real agents in a new folder (README: \"A team of real agents\"), Claude Code or Codex on your PATH:",
		"    mkdir -p ~/myteam",
		"    " + team + "init --name myteam",
		"    " + team + "agent add lead --type human --role manager",
		"    " + team + "agent add coder --type ai --parent lead --client claude     (or --client codex)",
		"    " + team + "task add \"Write the parser\" --assignee coder --status in_progress",
		"    " + team + "watch --until-idle      the watcher starts coder's client for the task",
		"    " + team + "task list",
	}
	if kept {
		lines = append(lines,
			"• "+aipm+" --dir "+shell.Quote(dir)+" inbox --as lead      what reviewer answered you, the human",
			"• "+aipm+" --dir "+shell.Quote(dir)+" status             the project the demo kept (rm -rf it when done)")
	}
	lines = append(lines, "• "+aipm+" demo --web           the same demo with its live board in your browser (aipm web)")
	for _, line := range lines {
		d.printf("  %s\n", line)
	}
}

// aipmWord is how the user runs this aipm from where they stand: "aipm"
// when that is it on PATH; "go run ./cmd/aipm" for go run's temporary
// build; else its path.
func aipmWord(exe string, onPath bool) string {
	switch {
	case onPath:
		return "aipm"
	case strings.Contains(exe, string(filepath.Separator)+"go-build"):
		return "go run ./cmd/aipm"
	}
	return shell.Quote(exe)
}

// aipmOnPath makes "aipm" on this process's PATH name exe, the binary
// running the demo: the watcher resolves an agent's command with it and
// passes it on, so the agents' command is "aipm sim", not the path of a
// build that go run deletes when it exits. It says whether an aipm was on
// the PATH before (a project kept with --keep runs that one).
func aipmOnPath(exe string) (onPath bool, restore func(), err error) {
	path := os.Getenv("PATH")
	restore = func() { os.Setenv("PATH", path) }
	found := shell.LookPath(path, "aipm")
	if found != "" && shell.SameFile(found, exe) {
		return true, restore, nil
	}
	dir := filepath.Dir(exe)
	if filepath.Base(exe) != "aipm" {
		tmp, err := os.MkdirTemp("", "aipm-demo-bin-*")
		if err != nil {
			return false, nil, fmt.Errorf("demo: %w", err)
		}
		if err := os.Symlink(exe, filepath.Join(tmp, "aipm")); err != nil {
			os.RemoveAll(tmp)
			return false, nil, fmt.Errorf("demo: %w", err)
		}
		dir, restore = tmp, func() { os.Setenv("PATH", path); os.RemoveAll(tmp) }
	}
	os.Setenv("PATH", dir+string(os.PathListSeparator)+path)
	return found != "", restore, nil
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
	d.note("config.toml [defaults]: chat_idle_timeout = \"1s\", wait_seconds = 1 (idle agents exit quickly)")
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
// word game conversation to the same agent's chat session.
func (d *demo) delegatedShiritori() error {
	d.note("%s", d.game.rules)
	id, err := d.startTask(d.game.title, "delegate: reviewer: "+d.game.purpose)
	if err != nil {
		return err
	}
	return d.until("the delegated word game to end, the task to be done and every agent to exit", func() bool {
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
	// Edited once coder works on it (its log says so): a task blocked
	// before its session's first get_next_action is no work, and the
	// agent just exits, with nothing to stop and nothing to report.
	if err := d.until("coder's task session to work on the task", func() bool {
		live, _ := d.store.LiveSessions(time.Now())
		return slices.ContainsFunc(live, func(s fsstore.Session) bool { return s.Agent == "coder" && s.TaskID == id }) &&
			d.runLogSays("coder", fsstore.PurposeTask, "working on "+id)
	}); err != nil {
		return err
	}
	d.note("lead opens .ai-pm/tasks/%s.json in an editor, sets \"status\": \"blocked\" and saves (write a new file, rename it over the old)", id)
	if err := demoHandEdit(d.store, id, fsstore.StatusBlocked); err != nil {
		return err
	}
	return d.until("coder to report blocked and exit", func() bool {
		t, err := d.store.Task(id)
		runs, _ := d.store.Runs().List()
		return err == nil && t.Result == "blocked" && len(runs) == 0
	})
}

// humanAsks is seed 000 with a human: lead messages reviewer, the watcher
// starts reviewer's chat session, and its answer waits unread in lead's
// inbox, for the "try next" step that reads it.
func (d *demo) humanAsks() error {
	if _, err := d.aipm("send", "--as", "lead", "--to", "reviewer", "thanks for the game: anything I should know?"); err != nil {
		return err
	}
	return d.until("reviewer to answer lead and exit", func() bool {
		msgs, _, err := d.store.Unread(d.ctx, "lead", 10, true)
		runs, _ := d.store.Runs().List()
		return err == nil && slices.ContainsFunc(msgs, func(m fsstore.Message) bool { return m.SenderID == "reviewer" }) && len(runs) == 0
	})
}

// runLogSays says whether the log of agent's run for purpose holds text.
func (d *demo) runLogSays(agent, purpose, text string) bool {
	runs, _ := d.store.Runs().List()
	for _, r := range runs {
		if r.Agent == agent && r.Purpose == purpose {
			data, err := os.ReadFile(r.Log)
			return err == nil && strings.Contains(string(data), text)
		}
	}
	return false
}

// summary prints the state the demo left: status, tasks, delegations,
// coder's chat log, the conversations and the files.
func (d *demo) summary() error {
	d.note("summary")
	for _, argv := range [][]string{{"status"}, {"task", "list"}, {"delegations", "--all"}, {"log", "coder"}} {
		if _, err := d.aipm(argv...); err != nil {
			return err
		}
	}
	convs, _ := d.store.Conversations().List(d.ctx, mustConfig(d.store), true)
	for _, c := range convs {
		d.printf("\nconversation %s: %s → %s, %s after %d turns (%s)\n", c.ID, c.Initiator, c.Other(c.Initiator), c.State, c.Turns, c.EndReason)
	}
	d.printf("\nfiles under %s:\n", fsstore.DirName)
	filepath.WalkDir(d.store.Root(), func(path string, de os.DirEntry, err error) error {
		if err == nil && de.IsDir() && path != d.store.Root() && strings.HasPrefix(de.Name(), ".") {
			return filepath.SkipDir // plumbing: .spare/
		}
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
			return fmt.Errorf("demo: gave up waiting for %s after %s: the agents' logs are in %s (the demo project, kept)", what, demoWait, filepath.Join(d.store.Root(), "logs"))
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
// receiver's copy, or a group message's from its sender's, naming every
// receiver), until the returned function is called.
func (d *demo) followChat(ctx context.Context) (stop func()) {
	agents := []string{"lead", "coder", "reviewer", "tester"} // tester: --scenario group
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
				group := m.ReceiverIDs != nil
				if group && m.SenderID == a || !group && m.ReceivedBy(a) {
					at, _ := time.Parse(time.RFC3339Nano, m.CreatedAt)
					lines = append(lines, line{at, m.SenderID, m.Audience(a), m.Content})
				}
			}
		}
		// In the order written, whoever received them.
		slices.SortStableFunc(lines, func(x, y line) int { return x.at.Compare(y.at) })
		for _, l := range lines {
			d.printf("  %s %s → %s: %s\n", d.paint("32", "chat  |"), l.from, l.to, l.content)
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
				d.state("task %s (%s) is done: %s\n", t.ID, t.Assignee, t.Summary)
				continue
			}
			d.state("task %s (%s) is %s\n", t.ID, t.Assignee, t.Status)
		}
		dlgs, _ := d.store.Delegations().List(fsstore.DelegationFilter{})
		for _, g := range dlgs {
			if seen[g.ID] == g.Status {
				continue
			}
			seen[g.ID] = g.Status
			d.explain("delegation")
			switch g.Status {
			case fsstore.DlgPending:
				d.state("delegation %s is pending: %s's task session asks its chat session: %q with %s\n", g.ID, g.Agent, g.Purpose, g.Target)
			case fsstore.DlgProcessing:
				d.state("delegation %s is processing (%s's chat session took it)\n", g.ID, g.Agent)
			default:
				d.state("delegation %s is %s: %s\n", g.ID, g.Status, g.Result)
			}
		}
	}
	return pollUntilStopped(ctx, poll)
}

// state prints a "state |" line: a change of a task's or delegation's state.
func (d *demo) state(format string, args ...any) {
	d.printf("  %s %s", d.paint("35", "state |"), fmt.Sprintf(format, args...))
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
	return fixtures.Of(s).HandEdit(fsstore.Tasks, id, func(fields map[string]any) { fields["status"] = status })
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
	h.explainRecord(r)
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
	h.d.printf("  %s %s\n", h.d.paint("34", "watch |"), b.String())
	return nil
}

// explainRecord explains, before the watcher's line that first shows it,
// the idea the line is about.
func (h *demoLog) explainRecord(r slog.Record) {
	r.Attrs(func(a slog.Attr) bool {
		switch v := a.Value.String(); {
		case r.Message == "agent started" && a.Key == "purpose":
			h.d.explain(v + " session")
		case a.Key == "reason" && v == "conversation_request":
			h.d.explain("conversation")
		}
		return true
	})
	if r.Message == "interrupt written" {
		h.d.explain("interrupt", "notification")
	}
}
