package watcher

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"aipm/fsstore"
)

// The test binary re-executes itself as an agent process (the watcher
// starts it from the config's command) or as a watcher.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		if role, ok := strings.CutPrefix(os.Args[len(os.Args)-1], "helper:"); ok {
			if err := helper(role); err != nil {
				fmt.Fprintln(os.Stderr, "helper:", err)
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}

// helper roles: "fail" exits 3 at once; "block-task" blocks a task; "sleeper" authenticates the way a
// started agent does (AIPM_* environment), starts a conversation with
// reviewer when it is coder, and waits to be killed; "watch" runs a
// watcher on the project in AIPM_PROJECT_DIR.
func helper(role string) error {
	ctx := context.Background()
	store, err := fsstore.Open(os.Getenv(fsstore.EnvProjectDir))
	if err != nil {
		return err
	}
	switch role {
	case "fail":
		os.Exit(3)
	case "watch":
		return New(store, slog.New(slog.NewTextHandler(os.Stderr, nil))).Run(ctx)
	case "block-task": // a human blocks the task AIPM_TEST_TASK through aipm
		cfg, err := store.LoadConfig()
		if err != nil {
			return err
		}
		_, err = store.UpdateTask(ctx, cfg, os.Getenv("AIPM_TEST_TASK"), "lead", fsstore.TaskChange{Status: fsstore.StatusBlocked, Reason: "test"})
		return err
	case "sleeper":
		cfg, err := store.LoadConfig()
		if err != nil {
			return err
		}
		agent := os.Getenv(fsstore.EnvAgentID)
		passkey, err := fsstore.ReadPasskeyFile(os.Getenv(fsstore.EnvPasskeyFile))
		if err != nil {
			return err
		}
		if _, _, err := store.Authenticate(ctx, cfg, agent, passkey, "", os.Getenv(fsstore.EnvPurpose)); err != nil {
			return err
		}
		if agent == "coder" && os.Getenv(fsstore.EnvPurpose) == fsstore.PurposeChat {
			store.Unread(ctx, agent, 100, false)
			if _, _, err := store.Conversations().Start(ctx, cfg, fsstore.NewConversation{From: agent, To: "reviewer", Purpose: "test"}); err != nil {
				return err
			}
		}
		// Not select{}: with no other goroutine left the runtime would
		// find a deadlock and end the process, and a watcher restarted
		// meanwhile would rightly see the agent gone.
		time.Sleep(time.Hour)
		return nil
	}
	if play := helperRoles[role]; play != nil {
		return play()
	}
	return fmt.Errorf("unknown role %q", role)
}

type project struct {
	t        *testing.T
	store    *fsstore.Store
	passkeys map[string]string
	log      *syncBuffer
}

// newProject makes a project with human lead and AI agents coder and
// reviewer; commands gives an agent's helper role (none: no command).
func newProject(t *testing.T, defaults string, commands map[string]string) *project {
	t.Helper()
	store, err := fsstore.Init(t.TempDir(), "watch-test")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p := &project{t: t, store: store, passkeys: map[string]string{}, log: &syncBuffer{}}
	if _, err := store.AddAgent(ctx, fsstore.NewAgent{ID: "lead", Type: fsstore.AgentHuman}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"coder", "reviewer"} {
		a := fsstore.NewAgent{ID: id, Type: fsstore.AgentAI, Parent: "lead"}
		if role := commands[id]; role != "" {
			a.Command = []string{os.Args[0], "-test.run=^$", "helper:" + role}
		}
		pk, err := store.AddAgent(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		p.passkeys[id] = pk
		if _, err := store.SaveCredential(id, pk); err != nil {
			t.Fatal(err)
		}
	}
	cfgText, _ := os.ReadFile(store.ConfigPath())
	cfgText = bytes.Replace(cfgText, []byte("[defaults]\n"), []byte("[defaults]\nwait_seconds = 1\n"+defaults+"\n"), 1)
	if err := os.WriteFile(store.ConfigPath(), cfgText, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *project) cfg() *fsstore.Config {
	cfg, err := p.store.LoadConfig()
	if err != nil {
		p.t.Fatal(err)
	}
	return cfg
}

func (p *project) daemon() *Daemon {
	return New(p.store, slog.New(slog.NewTextHandler(p.log, nil)))
}

// loaded is a daemon with the project's config loaded, as a watcher is
// after its start, for tests that run its passes one by one.
func (p *project) loaded() *Daemon {
	d := p.daemon()
	d.loadConfig()
	return d
}

// passOnce runs one pass of d.
func (p *project) passOnce(d *Daemon) {
	p.t.Helper()
	if _, err := d.pass(context.Background()); err != nil {
		p.t.Fatal(err)
	}
}

// workingTask starts a task for coder and opens coder's task session on it.
func (p *project) workingTask() fsstore.Task {
	p.t.Helper()
	task := p.startedTask("coder")
	if _, _, err := p.store.Authenticate(context.Background(), p.cfg(), "coder", p.passkeys["coder"], "", fsstore.PurposeTask); err != nil {
		p.t.Fatal(err)
	}
	return task
}

// run starts a watcher and returns the channel of its finished passes; it
// is stopped when the test ends.
func (p *project) run() (*Daemon, <-chan int) {
	d := p.daemon()
	passes := make(chan int, 1000)
	d.Passes = passes
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	p.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			p.t.Error(err)
		}
	})
	<-passes
	return d, passes
}

func (p *project) send(from, to, content string) {
	p.t.Helper()
	if _, err := p.store.Send(context.Background(), p.cfg(), fsstore.OutgoingMessage{From: from, To: to, Content: content}); err != nil {
		p.t.Fatal(err)
	}
}

func (p *project) startedTask(assignee string) fsstore.Task {
	p.t.Helper()
	ctx := context.Background()
	task, err := p.store.CreateTask(ctx, p.cfg(), fsstore.NewTask{Title: "Fix it", Assignee: assignee, Status: fsstore.StatusTodo})
	if err != nil {
		p.t.Fatal(err)
	}
	task, err = p.store.UpdateTask(ctx, p.cfg(), task.ID, "lead", fsstore.TaskChange{Status: fsstore.StatusInProgress})
	if err != nil {
		p.t.Fatal(err)
	}
	return task
}

func (p *project) path(rel string) string { return filepath.Join(p.store.Root(), rel) }

func (p *project) exists(rel string) bool {
	_, err := os.Stat(p.path(rel))
	return err == nil
}

// tree is a digest of .ai-pm (locks and the watcher's own record aside).
func (p *project) tree() string {
	var lines []string
	filepath.WalkDir(p.store.Root(), func(path string, d fs.DirEntry, err error) error {
		if err != nil || strings.HasSuffix(d.Name(), ".lock") || d.Name() == "watcher.json" {
			return nil
		}
		entry := strings.TrimPrefix(path, p.store.Root())
		if !d.IsDir() {
			data, _ := os.ReadFile(path)
			entry += fmt.Sprintf(" %x", sha256.Sum256(data))
		}
		lines = append(lines, entry)
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// handEdit rewrites a task file the way an editor saves: a new file renamed
// over the old one.
func (p *project) handEdit(id string, edit func(doc map[string]any)) {
	p.t.Helper()
	path := p.path("tasks/" + id + ".json")
	var doc map[string]any
	data, err := os.ReadFile(path)
	if err != nil {
		p.t.Fatal(err)
	}
	json.Unmarshal(data, &doc)
	edit(doc)
	data, _ = json.MarshalIndent(doc, "", "  ")
	p.writeRename(path, data)
}

func (p *project) writeRename(path string, data []byte) {
	tmp := path + ".swp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		p.t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		p.t.Fatal(err)
	}
}

func (p *project) interrupts(agent string) int {
	recs, _, _, _ := fsstore.ReadAll(p.path("agents/" + agent + "/notifications.jsonl"))
	n := 0
	for _, r := range recs {
		if bytes.Contains(r.Data, []byte(`"type":"interrupt"`)) {
			n++
		}
	}
	return n
}

// eventually waits for cond, re-checking on every pass of the watcher (or
// every few milliseconds); it fails the test after a generous bound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) count(re string) int {
	return len(regexp.MustCompile(re).FindAllStringIndex(s.String(), -1))
}

// TestOnceTriggers: one pass writes a chat trigger for inbound chat, a
// chat trigger for a pending conversation, a task trigger for a task in
// progress; a second pass (and a fresh watcher's) writes nothing.
func TestOnceTriggers(t *testing.T) {
	p := newProject(t, "", nil)
	ctx := context.Background()
	p.send("lead", "coder", "hello")
	if _, _, err := p.store.Conversations().Start(ctx, p.cfg(), fsstore.NewConversation{From: "coder", To: "reviewer"}); err != nil {
		t.Fatal(err)
	}
	task := p.startedTask("reviewer")
	if err := p.daemon().Once(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"pending/coder.chat.json":    "get_pending_messages",
		"pending/reviewer.chat.json": "conversation_request",
		"pending/reviewer.task.json": task.ID,
	}
	for rel, text := range want {
		data, err := os.ReadFile(p.path(rel))
		if err != nil || !strings.Contains(string(data), text) {
			t.Errorf("%s: %q, %v; want it to hold %q", rel, data, err, text)
		}
	}
	if p.exists("pending/coder.task.json") {
		t.Error("coder has no task in progress, but got a task trigger")
	}
	before := p.tree()
	for i := 0; i < 2; i++ {
		if err := p.daemon().Once(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if after := p.tree(); after != before {
		t.Errorf("a second pass changed files:\nbefore\n%s\nafter\n%s", before, after)
	}
	if n := p.log.count("trigger written"); n != 3 {
		t.Errorf("%d triggers written over three passes, want 3:\n%s", n, p.log)
	}
	// A live session of the purpose takes the place of a trigger.
	if _, _, err := p.store.Authenticate(ctx, p.cfg(), "coder", p.passkeys["coder"], "", fsstore.PurposeChat); err != nil {
		t.Fatal(err)
	}
	p.send("lead", "coder", "again")
	if err := p.daemon().Once(ctx); err != nil {
		t.Fatal(err)
	}
	if p.exists("pending/coder.chat.json") {
		t.Error("a trigger was written although coder's chat session is live")
	}
}

// TestHandEditInterrupt: a hand edit to blocked while the agent works
// writes one interrupt, however often it is seen (the same save twice, a
// restarted watcher); the agent blocking its own task interrupts nobody;
// an invalid hand edit is reported with its path and changes nothing.
func TestHandEditInterrupt(t *testing.T) {
	p := newProject(t, "", nil)
	task := p.workingTask()
	d := p.loaded()
	pass := p.passOnce
	pass(d)
	if n := p.interrupts("coder"); n != 0 {
		t.Fatalf("%d interrupts before any edit", n)
	}
	block := func(doc map[string]any) { doc["status"] = "blocked" }
	p.handEdit(task.ID, block)
	pass(d)
	if n := p.interrupts("coder"); n != 1 {
		t.Fatalf("%d interrupts after the hand edit, want 1", n)
	}
	p.handEdit(task.ID, block) // the same save again
	pass(d)
	pass(p.loaded()) // a restarted watcher, with no view
	if n := p.interrupts("coder"); n != 1 {
		t.Fatalf("%d interrupts after the same edit was seen again, want 1", n)
	}
	if !strings.Contains(p.log.String(), "hand edit") {
		t.Errorf("the log does not say it was a hand edit:\n%s", p.log)
	}

	// Invalid hand edits: reported as path:line or path, nothing written.
	other := p.startedTask("reviewer")
	pass(d)
	before := p.tree()
	p.writeRename(p.path("tasks/"+other.ID+".json"), []byte("{\n  \"status\": \"blocked\",\n  oops\n}\n"))
	pass(d)
	if !regexp.MustCompile(`tasks/` + other.ID + `\.json:3`).MatchString(p.log.String()) {
		t.Errorf("the invalid file is not reported as path:line:\n%s", p.log)
	}
	p.handEdit(task.ID, func(doc map[string]any) { doc["status"] = "blockd" })
	pass(d)
	if !regexp.MustCompile(`status \\?"blockd\\?" is invalid`).MatchString(p.log.String()) {
		t.Errorf("the invalid status is not reported:\n%s", p.log)
	}
	changed := 0
	for _, line := range strings.Split(p.tree(), "\n") {
		if !strings.Contains(before, line) {
			changed++
		}
	}
	if changed != 2 { // the two edited files themselves
		t.Errorf("%d files changed after invalid hand edits, want only the 2 edited:\n%s", changed, p.tree())
	}
}

// TestTriggerExpiry: a trigger nobody takes within trigger_ttl is removed
// and the agent's parent is told in a system message, once.
func TestTriggerExpiry(t *testing.T) {
	p := newProject(t, `trigger_ttl = "1s"`, nil)
	ctx := context.Background()
	old := time.Now().Add(-time.Hour).UTC()
	if err := p.store.Triggers().Write(ctx, fsstore.Trigger{Agent: "coder", Purpose: fsstore.PurposeChat, Reason: "test", CreatedAt: old}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := p.daemon().Once(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if p.exists("pending/coder.chat.json") {
		t.Error("the expired trigger is still there")
	}
	msgs, _, err := p.store.Unread(ctx, "lead", 10, true)
	if err != nil || len(msgs) != 1 || msgs[0].Kind != fsstore.KindSystem || !strings.Contains(msgs[0].Content, "coder was not started") {
		t.Errorf("lead's unread messages: %+v, %v; want one system message about coder", msgs, err)
	}
}

// TestSecondWatcherRefuses: the lock names the running watcher's pid.
func TestSecondWatcherRefuses(t *testing.T) {
	p := newProject(t, "", nil)
	p.run()
	err := p.daemon().Once(context.Background())
	if !errors.Is(err, fsstore.ErrWatcherRunning) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second watcher: %v; want ErrWatcherRunning naming pid %d", err, os.Getpid())
	}
	info, err := p.store.RunningWatcher()
	if err != nil || info == nil || info.PID != os.Getpid() {
		t.Fatalf("Running = %+v, %v", info, err)
	}
}

// TestKilledAgentEndsSessions: the watcher starts coder for a message; the
// process authenticates and opens a conversation; kill -9 of the process
// ends its session (process_exited) and the conversation (session_expired),
// and removes its run record.
func TestKilledAgentEndsSessions(t *testing.T) {
	p := newProject(t, "", map[string]string{"coder": "sleeper"})
	ctx := context.Background()
	p.run()
	p.send("lead", "coder", "play with reviewer")
	var run fsstore.Run
	eventually(t, "coder's run and its conversation", func() bool {
		convs, _ := p.store.Conversations().List(ctx, p.cfg(), false)
		if readDoc(p.path("runs/coder.chat.json"), &run) != nil || len(convs) != 1 {
			return false
		}
		live, _ := p.store.LiveSessions(time.Now())
		return len(live) == 1 && live[0].RunID == run.ID
	})
	if err := syscall.Kill(run.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the run released and the conversation ended", func() bool {
		all, _ := p.store.Conversations().List(ctx, p.cfg(), true)
		return !p.exists("runs/coder.chat.json") && len(all) == 1 && all[0].EndReason == fsstore.ReasonSessionExpired
	})
	if live, _ := p.store.LiveSessions(time.Now()); len(live) != 0 {
		t.Errorf("live sessions after the kill: %+v", live)
	}
}

// TestFailingCommandCooledDown: a command that fails is not started again
// within spawn_cooldown, however many passes run.
func TestFailingCommandCooledDown(t *testing.T) {
	p := newProject(t, `spawn_cooldown = "1h"`, map[string]string{"coder": "fail"})
	_, passes := p.run()
	p.send("lead", "coder", "hello")
	eventually(t, "the failure logged", func() bool { return p.log.count("agent process failed") == 1 })
	for i := 0; i < 5; i++ { // more changes, more passes
		for len(passes) > 0 {
			<-passes
		}
		p.send("lead", "coder", "still there?")
		<-passes
	}
	logs, _ := os.ReadDir(p.path("logs/coder"))
	if len(logs) != 1 || p.log.count("agent started") != 1 {
		t.Fatalf("%d starts (%d logs) of a failing command within its cooldown, want 1:\n%s", p.log.count("agent started"), len(logs), p.log)
	}
}

// TestRestartStartsNothingTwice: a watcher killed with -9 leaves its agent
// running; the next watcher adopts the run instead of starting another,
// picks up a trigger written while no watcher ran, and releases the
// adopted run (ending its sessions) when that process dies.
func TestRestartStartsNothingTwice(t *testing.T) {
	p := newProject(t, "", map[string]string{"coder": "sleeper", "reviewer": "sleeper"})
	first := exec.Command(os.Args[0], "-test.run=^$", "helper:watch")
	first.Env = append(os.Environ(), fsstore.EnvProjectDir+"="+p.store.ProjectDir())
	first.Stderr = p.log
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	task := p.startedTask("coder")
	var run fsstore.Run
	eventually(t, "coder's task run with a session", func() bool {
		live, _ := p.store.LiveSessions(time.Now())
		return readDoc(p.path("runs/coder.task.json"), &run) == nil && len(live) == 1 && live[0].TaskID == task.ID
	})
	first.Process.Kill()
	first.Wait()
	t.Cleanup(func() { syscall.Kill(run.PID, syscall.SIGKILL) })
	p.send("lead", "reviewer", "written while no watcher runs")
	_, passes := p.run()
	eventually(t, "reviewer started by the second watcher", func() bool { return p.exists("runs/reviewer.chat.json") })
	<-passes
	var again fsstore.Run
	if err := readDoc(p.path("runs/coder.task.json"), &again); err != nil || again.ID != run.ID {
		t.Fatalf("coder's run after the restart: %+v, %v; want the adopted %s", again, err, run.ID)
	}
	if logs, _ := os.ReadDir(p.path("logs/coder")); len(logs) != 1 {
		t.Fatalf("coder was started %d times", len(logs))
	}
	syscall.Kill(run.PID, syscall.SIGKILL)
	// Its task is still in progress, so coder is started again: once.
	eventually(t, "the adopted run released and its session ended", func() bool {
		live, _ := p.store.LiveSessions(time.Now())
		for _, s := range live {
			if s.RunID == run.ID {
				return false
			}
		}
		var now fsstore.Run
		return readDoc(p.path("runs/coder.task.json"), &now) != nil || now.ID != run.ID
	})
}

// TestConfigReload: an edit of config.toml is reloaded; an invalid one is
// logged as config.toml:LINE and the config in force stays.
func TestConfigReload(t *testing.T) {
	p := newProject(t, "", nil)
	d, passes := p.run()
	good, _ := os.ReadFile(p.store.ConfigPath())
	p.writeRename(p.store.ConfigPath(), append(append([]byte{}, good...), []byte("\n[[agents]]\nid = \"bad id\"\ntype = \"ai\"\n")...))
	eventually(t, "the invalid config logged", func() bool {
		return regexp.MustCompile(`config not reloaded.*config\.toml:\d+`).MatchString(p.log.String())
	})
	p.writeRename(p.store.ConfigPath(), append(append([]byte{}, good...), []byte("\n[[agents]]\nid = \"tester\"\ntype = \"ai\"\n")...))
	eventually(t, "the new config reloaded", func() bool { return p.log.count("config reloaded") == 1 })
	<-passes
	_ = d
}

// TestConfigReloadWarns: an unknown key is logged with its line and the
// nearest known key when the watcher starts, and a reload logs only an
// unknown key the config in force did not have: each once, however many
// times the file is saved.
func TestConfigReloadWarns(t *testing.T) {
	p := newProject(t, `chat_idel_timeout = "5m"`, nil)
	typo := `level=WARN msg="config: \.ai-pm/config\.toml:\d+: unknown key \\"defaults\.chat_idel_timeout\\" is ignored: did you mean chat_idle_timeout\?`
	p.run()
	if n := p.log.count(typo); n != 1 {
		t.Fatalf("the typo logged %d times at start, want 1:\n%s", n, p.log)
	}
	first, _ := os.ReadFile(p.store.ConfigPath())
	second := bytes.Replace(first, []byte("[defaults]\n"), []byte("[defaults]\nmax_concurent = 2\n"), 1)
	for i := range 3 { // the same new key, saved three times
		p.writeRename(p.store.ConfigPath(), second)
		eventually(t, "the config reloaded", func() bool { return p.log.count("config reloaded") >= i+1 })
	}
	eventually(t, "the new key logged", func() bool {
		return p.log.count(`config: \.ai-pm/config\.toml:\d+: unknown key \\"defaults\.max_concurent\\" is ignored: did you mean max_concurrent\?`) == 1
	})
	if n := p.log.count(typo); n != 1 {
		t.Errorf("the typo in force logged %d times, want once:\n%s", n, p.log)
	}
	if n := p.log.count(`max_concurent`); n != 1 {
		t.Errorf("the new key logged %d times over three saves, want once:\n%s", n, p.log)
	}
}

// TestDelegationTrigger: a pending delegation of an agent with no live chat
// session writes its chat trigger through the one rule (Store.Work), once;
// a delegation whose chat session ended while processing it writes one
// again; a closed delegation writes none.
func TestDelegationTrigger(t *testing.T) {
	p := newProject(t, "", nil)
	ctx := context.Background()
	task := p.startedTask("coder")
	taskSes, _, err := p.store.Authenticate(ctx, p.cfg(), "coder", p.passkeys["coder"], "", fsstore.PurposeTask)
	if err != nil {
		t.Fatal(err)
	}
	if taskSes.TaskID != task.ID {
		t.Fatalf("task session on %q, want %s", taskSes.TaskID, task.ID)
	}
	dlg, err := p.store.Delegations().Create(ctx, p.cfg(), fsstore.NewDelegation{Agent: "coder", TaskID: task.ID, Target: "reviewer", Purpose: "6-round shiritori"})
	if err != nil {
		t.Fatal(err)
	}
	once := func() {
		t.Helper()
		if err := p.daemon().Once(ctx); err != nil {
			t.Fatal(err)
		}
	}
	trigger := func() string {
		data, _ := os.ReadFile(p.path("pending/coder.chat.json"))
		return string(data)
	}
	once()
	if !strings.Contains(trigger(), fsstore.ActProcessDelegation) {
		t.Fatalf("pending/coder.chat.json = %q, want a process_delegation trigger", trigger())
	}
	if p.exists("pending/coder.task.json") || p.exists("pending/reviewer.chat.json") {
		t.Error("a trigger was written for the live task session or for the delegation's target")
	}
	before := p.tree()
	once()
	if after := p.tree(); after != before {
		t.Errorf("a second pass changed files:\nbefore\n%s\nafter\n%s", before, after)
	}

	// A chat session takes it and ends while processing it: the trigger is
	// written again, for the next chat session to take it over.
	chat, _, err := p.store.Authenticate(ctx, p.cfg(), "coder", p.passkeys["coder"], "", fsstore.PurposeChat)
	if err != nil {
		t.Fatal(err)
	}
	next, err := p.store.NextAction(ctx, p.cfg(), chat)
	if err != nil || next.Action != fsstore.ActProcessDelegation || next.Delegation.ID != dlg.ID {
		t.Fatalf("chat session's next action: %+v, %v; want process_delegation %s", next, err, dlg.ID)
	}
	os.Remove(p.path("pending/coder.chat.json"))
	once()
	if p.exists("pending/coder.chat.json") {
		t.Fatal("a chat trigger was written while a live chat session processes the delegation")
	}
	if _, err := p.store.EndSession(ctx, chat.ID, fsstore.EndExpired); err != nil {
		t.Fatal(err)
	}
	once()
	if !strings.Contains(trigger(), fsstore.ActProcessDelegation) {
		t.Fatalf("after the processing chat session ended: pending/coder.chat.json = %q, want process_delegation", trigger())
	}

	// Closed, it starts nobody.
	os.Remove(p.path("pending/coder.chat.json"))
	if _, err := p.store.Delegations().Complete(ctx, "coder", dlg.ID, fsstore.DlgCompleted, "done"); err != nil {
		t.Fatal(err)
	}
	once()
	if p.exists("pending/coder.chat.json") {
		t.Errorf("a completed delegation wrote a chat trigger: %q", trigger())
	}
}

// readDoc decodes the JSON document at path, as a person inspecting the
// project would read it.
func readDoc(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}
