package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"aipm/fsstore"
)

// hookProject is P8's project as a client's hook finds it: the AI agent r
// with its passkey in a 0600 file, a task in progress with r's task
// session and a chat session (both opened here, so their PID is this live
// process), 1,000 lines of chat history r has read, and a human w who
// writes to r. env is what the client gives its hooks (AIPM_PURPOSE=chat:
// the hook resolves the chat session, the one that reads the most).
type hookProject struct {
	store *fsstore.Store
	cfg   *fsstore.Config
	chat  fsstore.Session
	dir   string
	env   []string
}

func (b *bench) hookProject(name string) (*hookProject, error) {
	dir := filepath.Join(b.root, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	store, err := fsstore.Init(dir, name)
	if err != nil {
		return nil, fmt.Errorf("bench: init %s: %w", name, err)
	}
	key, err := store.AddAgent(b.ctx, fsstore.NewAgent{ID: "r", Type: fsstore.AgentAI})
	if err != nil {
		return nil, fmt.Errorf("bench: add agent r: %w", err)
	}
	if _, err := store.AddAgent(b.ctx, fsstore.NewAgent{ID: "w", Type: fsstore.AgentHuman}); err != nil {
		return nil, fmt.Errorf("bench: add agent w: %w", err)
	}
	if err := writeTasks(store, 4); err != nil {
		return nil, fmt.Errorf("bench: write tasks: %w", err)
	}
	chatPath, _ := store.ChatPath("r")
	if err := writeHistory(store, chatPath, 1000); err != nil {
		return nil, fmt.Errorf("bench: write chat history: %w", err)
	}
	if err := store.CatchUp(b.ctx, "r"); err != nil {
		return nil, fmt.Errorf("bench: read chat history: %w", err)
	}
	cfg, err := store.LoadConfig()
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if _, _, err := store.Authenticate(b.ctx, cfg, "r", key, "", fsstore.PurposeTask); err != nil {
		return nil, fmt.Errorf("bench: authenticate r's task session: %w", err)
	}
	chat, _, err := store.Authenticate(b.ctx, cfg, "r", key, "", fsstore.PurposeChat)
	if err != nil {
		return nil, fmt.Errorf("bench: authenticate r's chat session: %w", err)
	}
	keyFile := filepath.Join(b.root, name+"-passkey")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("bench: write passkey file: %w", err)
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "AIPM_") })
	env = append(env, fsstore.EnvAgentID+"=r", fsstore.EnvPasskeyFile+"="+keyFile, fsstore.EnvPurpose+"="+fsstore.PurposeChat)
	return &hookProject{store: store, cfg: cfg, chat: chat, dir: dir, env: env}, nil
}

// hookInput is the stdin Claude Code gives a hook at event (a Bash tool
// call at PostToolUse).
func hookInput(event, cwd string) []byte {
	in := map[string]any{
		"session_id": "bench-0000", "transcript_path": filepath.Join(cwd, "transcript.jsonl"), "cwd": cwd,
		"hook_event_name": event,
	}
	switch event {
	case "PostToolUse":
		in["tool_name"] = "Bash"
		in["tool_input"] = map[string]any{"command": "go test ./...", "description": "Run the tests"}
		in["tool_response"] = map[string]any{"stdout": "ok  \taipm\t0.012s", "stderr": "", "interrupted": false, "isImage": false}
	case "Stop":
		in["stop_hook_active"] = false
	}
	data, _ := json.Marshal(in) // maps of strings and bools: cannot fail
	return data
}

// runTimed starts argv in dir with env and stdin, as a client starts its
// hook, and returns the time to its exit and how many bytes it printed.
func (b *bench) runTimed(argv []string, dir string, env []string, stdin []byte) (time.Duration, []byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := b.command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = dir, env, bytes.NewReader(stdin), &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return 0, nil, fmt.Errorf("bench: %s: %w: %s", strings.Join(argv, " "), err, stderr.String())
	}
	if stderr.Len() > 0 {
		return 0, nil, fmt.Errorf("bench: %s wrote on stderr: %s", strings.Join(argv, " "), stderr.String())
	}
	return d, stdout.Bytes(), nil
}

// helloFloor is P4v's and P8a's floor: a hello-world Go binary built now
// (once a run), or aipm version when there is no go command to build it
// (label says which).
func (b *bench) helloFloor() (argv []string, label string) {
	dir := filepath.Join(b.root, "hello")
	if fi, err := os.Stat(filepath.Join(dir, "hello")); err == nil && fi.Mode().IsRegular() {
		return []string{filepath.Join(dir, "hello")}, "hello-world Go binary"
	}
	if _, err := exec.LookPath("go"); err != nil {
		return []string{b.aipm, "version"}, "aipm version: no go on PATH"
	}
	src := "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello, world\") }\n"
	if err := os.Mkdir(dir, 0o755); err != nil {
		return []string{b.aipm, "version"}, "aipm version: " + err.Error()
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n"), 0o644); err != nil {
		return []string{b.aipm, "version"}, "aipm version: " + err.Error()
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		return []string{b.aipm, "version"}, "aipm version: " + err.Error()
	}
	cmd := b.command("go", "build", "-o", "hello", ".")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.progress("go build of the hello-world floor failed (%v): %s", err, out)
		return []string{b.aipm, "version"}, "aipm version: go build failed"
	}
	return []string{filepath.Join(dir, "hello")}, "hello-world Go binary"
}

// hookBinary is the aipm-hook binary the entries run when it is installed
// (cmd/aipm-hook): beside this aipm, else on PATH, else built now from the
// module when the go command can ("" if none of these works).
func (b *bench) hookBinary() string {
	beside := filepath.Join(filepath.Dir(b.aipm), "aipm-hook")
	if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() {
		return beside
	}
	if path, err := exec.LookPath("aipm-hook"); err == nil {
		return path
	}
	if _, err := exec.LookPath("go"); err != nil {
		return ""
	}
	out := filepath.Join(b.root, "aipm-hook")
	cmd := b.command("go", "build", "-o", out, "aipm/cmd/aipm-hook")
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0") // as README's install builds it
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.progress("P8a: no aipm-hook beside aipm or on PATH, and go build failed (%v): %s", err, msg)
		return ""
	}
	return out
}

// hookWallTime is P8a: fork/exec -> exit of the hook answering a
// PostToolUse (Bash) with nothing new for the agent's session, which must
// print nothing: aipm-hook (what aipm mcp-config writes when it is
// installed) and aipm hook (the one-binary form), beside a hello-world Go
// binary started the same way (same stdin, environment and directory),
// the three interleaved.
func (b *bench) hookWallTime() ([]Row, error) {
	b.progress("P8a: %d runs of each hook command (PostToolUse, nothing new), interleaved with the floor", b.hooks)
	p, err := b.hookProject("p8a")
	if err != nil {
		return nil, err
	}
	floorArgv, label := b.helloFloor()
	commands := [][]string{{b.aipm, "hook", "--client", "claude"}}
	if bin := b.hookBinary(); bin != "" {
		commands = append([][]string{{bin, "--client", "claude"}}, commands...)
	}
	stdin := hookInput("PostToolUse", p.dir)

	// One untimed run of each tells a notification: the hook finds the
	// session and answers (so that its silence below is "nothing new", not
	// "no session").
	for i, argv := range commands {
		msg := fmt.Sprintf("bench: P8a starts (%d)", i)
		if _, err := p.store.Notify(b.ctx, "r", fsstore.Notification{Message: msg}); err != nil {
			return nil, fmt.Errorf("bench: notify r: %w", err)
		}
		if _, out, err := b.runTimed(argv, p.dir, p.env, stdin); err != nil {
			return nil, err
		} else if !bytes.Contains(out, []byte(msg)) {
			return nil, fmt.Errorf("bench: %s did not tell the session's notification (no session found?): %q", strings.Join(argv, " "), out)
		}
	}

	lat := make([][]time.Duration, len(commands))
	printed := make([]int, len(commands))
	var floor []time.Duration
	for range b.hooks {
		d, _, err := b.runTimed(floorArgv, p.dir, p.env, stdin)
		if err != nil {
			return nil, err
		}
		floor = append(floor, d)
		for j, argv := range commands {
			d, out, err := b.runTimed(argv, p.dir, p.env, stdin)
			if err != nil {
				return nil, err
			}
			lat[j], printed[j] = append(lat[j], d), printed[j]+len(out)
		}
	}
	slices.Sort(floor)
	var rows []Row
	for j, argv := range commands {
		slices.Sort(lat[j])
		over := percentile(lat[j], 99) - percentile(floor, 99)
		id, name := "P8a", "aipm-hook"
		if argv[0] == b.aipm {
			name = "aipm hook"
			if len(commands) > 1 {
				id = "P8a1" // the one-binary form, beside the one the entries run
			}
		}
		aipmValues := latencies(lat[j])
		aipmValues["bytes_out"] = float64(printed[j])
		rows = append(rows, Row{
			id: id, what: fmt.Sprintf("%s wall time p50/p99: PostToolUse, nothing new, %d runs", name, len(lat[j])),
			aipm:     ms(percentile(lat[j], 50)) + " / " + ms(percentile(lat[j], 99)),
			floor:    ms(percentile(floor, 50)) + " / " + ms(percentile(floor, 99)) + " (" + label + ")",
			compared: fmt.Sprintf("p99 %s, %d bytes out", signedMs(over), printed[j]), target: fmt.Sprintf("p99 <= floor + %d ms, 0 bytes", hookOverHello),
			aipmValues: aipmValues, floorValues: latencies(floor),
		}.judged(atMost("p99 - floor p99", msOf(over), hookOverHello, "ms"), atMost("bytes out", float64(printed[j]), 0, "bytes")))
	}
	return rows, nil
}

// hookWake is P8b: a message appended -> the agent's waiting asyncRewake
// hook (aipm hook --wake) exits with the notice; beside the inotify wake
// of P1's floor (an fsync'd append in this process waking a reader in
// another), one floor sample after each hook sample.
func (b *bench) hookWake() ([]Row, error) {
	b.progress("P8b: %d asyncRewake hooks woken by a message, interleaved with the floor", b.hooks)
	p, err := b.hookProject("p8b")
	if err != nil {
		return nil, err
	}
	floor, err := b.newDeliveryFloor("p8b-floor")
	if err != nil {
		return nil, err
	}
	defer floor.close()
	stdin := hookInput("Stop", p.dir)
	var lat, floorLat []time.Duration
	for i := 0; i < b.hooks; i++ {
		d, err := b.wakeSample(p, stdin, i)
		if err != nil {
			return nil, err
		}
		lat = append(lat, d)
		fs, _, err := floor.sample()
		if err != nil {
			return nil, err
		}
		floorLat = append(floorLat, fs)
	}
	slices.Sort(lat)
	slices.Sort(floorLat)
	p50, p99 := percentile(lat, 50), percentile(lat, 99)
	return []Row{Row{
		id: "P8b", what: fmt.Sprintf("append -> asyncRewake hook exits p50/p99, %d samples", len(lat)),
		aipm:     ms(p50) + " / " + ms(p99),
		floor:    ms(percentile(floorLat, 50)) + " / " + ms(percentile(floorLat, 99)) + " (inotify wake)",
		compared: "p99 " + signedMs(p99-percentile(floorLat, 99)), target: "p50 <= 50 ms, p99 <= 200 ms",
		aipmValues: latencies(lat), floorValues: latencies(floorLat),
	}.judged(atMost("p50", msOf(p50), 50, "ms"), atMost("p99", msOf(p99), 200, "ms"))}, nil
}

// wakeSettle is how long after the hook took its wake lock the bench waits
// before it appends: the hook then subscribes and looks once before it
// sleeps (well under a millisecond on an idle machine).
const wakeSettle = 5 * time.Millisecond

// wakeSample starts aipm hook --wake for the chat session, waits until it
// holds the session's wake lock (and wakeSettle), sends r a message from
// w and times the append -> the hook's exit, which must be code 2 with the
// notice on stderr (the hook records it told: the next sample's hook waits
// for the next message).
func (b *bench) wakeSample(p *hookProject, stdin []byte, i int) (time.Duration, error) {
	var stdout, stderr bytes.Buffer
	cmd := b.command(b.aipm, "hook", "--client", "claude", "--wake")
	cmd.Dir, cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = p.dir, p.env, bytes.NewReader(stdin), &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("bench: start aipm hook --wake: %w", err)
	}
	var exitErr error
	exited := make(chan struct{})
	go func() { exitErr = cmd.Wait(); close(exited) }()
	kill := func() { cmd.Process.Kill(); <-exited }

	// sessions/.<id>.wake: the lock fsstore's TryWakeLock takes.
	lock := filepath.Join(p.store.CollectionDir(fsstore.Sessions), "."+p.chat.ID+".wake")
	if err := waitFlocked(b.ctx, lock, cmd.Process.Pid, exited); err != nil {
		kill()
		return 0, fmt.Errorf("bench: aipm hook --wake: %w (exit %v, stderr %q)", err, exitErr, stderr.String())
	}
	time.Sleep(wakeSettle)
	start := time.Now()
	if _, err := p.store.Send(b.ctx, p.cfg, fsstore.OutgoingMessage{From: "w", To: "r", Content: "wake " + strconv.Itoa(i)}); err != nil {
		kill()
		return 0, fmt.Errorf("bench: send to r: %w", err)
	}
	select {
	case <-exited:
	case <-b.ctx.Done():
		kill()
		return 0, fmt.Errorf("bench: waiting for aipm hook --wake to wake: %w", context.Cause(b.ctx))
	case <-time.After(30 * time.Second):
		kill()
		return 0, errors.New("bench: aipm hook --wake did not wake within 30 s of the message")
	}
	d := time.Since(start)
	var exit *exec.ExitError
	if !errors.As(exitErr, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), "new message") {
		return 0, fmt.Errorf("bench: aipm hook --wake exited with %v, want exit code 2 and the notice; stderr %q, stdout %q", exitErr, stderr.String(), stdout.String())
	}
	return d, nil
}

// waitFlocked polls /proc/locks until process pid holds a flock on path
// (looking does not take the lock, which would make the hook give up).
func waitFlocked(ctx context.Context, path string, pid int, exited <-chan struct{}) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		held, err := flockedBy(path, pid)
		if err != nil || held {
			return err
		}
		select {
		case <-exited:
			return errors.New("exited before it waited")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Microsecond):
		}
		if time.Now().After(deadline) {
			return errors.New("did not take its wake lock within 30 s")
		}
	}
}

// flockedBy says whether /proc/locks lists a flock of pid on path's inode.
func flockedBy(path string, pid int) (bool, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("stat wake lock: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false, errors.New("no inode for the wake lock on this system")
	}
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		return false, fmt.Errorf("P8b reads /proc/locks: %w", err)
	}
	// "1: FLOCK  ADVISORY  WRITE 516 fe:00:9984890 0 EOF"; a waiter's line
	// has "->" before FLOCK and is skipped.
	owner, inode := strconv.Itoa(pid), ":"+strconv.FormatUint(st.Ino, 10)
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && f[1] == "FLOCK" && f[4] == owner && strings.HasSuffix(f[5], inode) {
			return true, nil
		}
	}
	return false, nil
}
