// Package bench is the body of aipm-bench (cmd/aipm-bench): it measures
// DESIGN's performance targets (section 13), each beside its raw floor
// measured in the same run, with real aipm serve processes driven by the
// MCP SDK's client over stdio, in throw-away projects with fsync on. The
// floors' helper processes (FloorReader, FloorWriter, FloorServer) are
// hidden commands of aipm-bench itself, so that the aipm binary measured
// holds nothing of the bench.
package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// Options are what one run measures, and with what.
type Options struct {
	Quick bool      // fewer iterations and a 100,000-line history (a smoke run)
	Only  []string  // the targets to measure (P1 to P10, or a row of one); all when empty
	Aipm  string    // the aipm binary measured: every aipm process the bench starts is one
	Self  string    // the bench's own binary, which runs the floors' helpers (bench-floor-reader ...)
	Log   io.Writer // progress lines
}

// Check refuses an Options.Only that names no target (ErrUnknownTarget),
// before anything is measured or built.
func Check(only []string) error {
	_, err := (&bench{}).measures(only)
	return err
}

// Run measures the performance targets of DESIGN section 13, each beside
// its raw floor measured in the same run, and returns the rows in id order.
func Run(ctx context.Context, opt Options) ([]Row, error) {
	b := &bench{ctx: ctx, log: opt.Log, aipm: opt.Aipm, self: opt.Self, deliveries: 2000, sends: 400, reads: 200, history: 1_000_000, starts: 30, hooks: 300, webSamples: 1000, renders: 20}
	if opt.Quick {
		b.deliveries, b.sends, b.reads, b.history, b.starts, b.hooks, b.webSamples, b.renders = 40, 50, 40, 100_000, 10, 8, 10, 5
	}
	measures, err := b.measures(opt.Only)
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "aipm-bench-*")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer os.RemoveAll(root)
	b.root = root
	var rows []Row
	for _, measure := range measures {
		r, err := measure()
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
	}
	slices.SortFunc(rows, func(a, b Row) int { return compareIDs(a.id, b.id) })
	return rows, nil
}

// compareIDs orders row ids by their target's number, then the row's
// letters: P1, P1i, P1r, P2, ..., P9c, P10h1.
func compareIDs(a, b string) int {
	num := func(id string) (int, string) {
		i := 1
		for i < len(id) && id[i] >= '0' && id[i] <= '9' {
			i++
		}
		n, _ := strconv.Atoi(id[1:i])
		return n, id[i:]
	}
	na, ra := num(a)
	nb, rb := num(b)
	if na != nb {
		return na - nb
	}
	return strings.Compare(ra, rb)
}

// Header names the columns of Row.Cells.
var Header = []string{"id", "what", "aipm", "raw floor", "compared", "target", "met", "client cpu"}

// Cells is the row as the table prints it, in Header's order.
func (r Row) Cells() []string {
	cpu := r.cpu
	if cpu == "" {
		cpu = "-"
	}
	return []string{r.id, r.what, r.aipm, r.floor, r.compared, r.target, map[bool]string{true: "yes", false: "NO"}[r.met], cpu}
}

// JSON is the row as --json prints it.
func (r Row) JSON() map[string]any {
	return map[string]any{"id": r.id, "what": r.what, "aipm": r.aipm, "floor": r.floor, "compared": r.compared, "target": r.target, "met": r.met, "client_cpu": r.cpu}
}

// measures returns the measurements of the targets named in only (all of
// them when only is empty), in the order they run. A target is named by its
// DESIGN id; a measurement that also yields another row runs when the
// targets listed beside it are named: P3 gives P5 and runs for either,
// P1 also gives P1r and P2 gives P2rpc (named as P1 and P2).
func (b *bench) measures(only []string) ([]func() ([]Row, error), error) {
	all := []struct {
		targets []string
		run     func() ([]Row, error)
	}{
		{[]string{"P1"}, b.delivery},
		{[]string{"P2"}, b.throughput},
		{[]string{"P3", "P5"}, b.history1M},
		{[]string{"P3", "P3C", "P3S"}, b.compacted},
		{[]string{"P4"}, b.startup},
		{[]string{"P6", "P6A"}, b.ownSent},
		{[]string{"P6", "P6B"}, b.unreadNotifications},
		{[]string{"P6", "P6C"}, b.listTasks},
		{[]string{"P6", "P6D"}, b.myTask},
		{[]string{"P6", "P6E"}, b.authTasks},
		{[]string{"P6", "P6F"}, b.authSessions},
		{[]string{"P6", "P6G"}, b.authOwnSent},
		{[]string{"P6", "P6H"}, b.ownSentCompacted},
		{[]string{"P7"}, b.watchBench},
		{[]string{"P8", "P8A"}, b.hookWallTime},
		{[]string{"P8", "P8B"}, b.hookWake},
		{[]string{"P9", "P9A"}, b.webLive},
		{[]string{"P9", "P9B"}, b.webFirstRender},
		{[]string{"P9", "P9C"}, b.webWeight},
		{[]string{"P10", "P10S1", "P10H1"}, b.remoteDelivery},
		{[]string{"P10", "P10S2", "P10H2"}, b.remoteThroughput},
	}
	want := map[string]bool{}
	for _, id := range only {
		id = strings.ToUpper(strings.TrimSpace(id))
		known := false
		for _, m := range all {
			known = known || slices.Contains(m.targets, id)
		}
		if !known {
			return nil, fmt.Errorf("--only %q: %w; name some of P1 to P10, or a P3, P6, P8, P9 or P10 row (P3c, P3s, P6a to P6h, P8a, P8b, P9a to P9c, P10s1, P10s2, P10h1, P10h2)", id, ErrUnknownTarget)
		}
		want[id] = true
	}
	var runs []func() ([]Row, error)
	for _, m := range all {
		if len(want) == 0 || slices.ContainsFunc(m.targets, func(id string) bool { return want[id] }) {
			runs = append(runs, m.run)
		}
	}
	return runs, nil
}

// Row is one measured target beside its floor.
type Row struct {
	id, what, aipm, floor, compared, target string
	met                                     bool
	cpu                                     string // the bench client's own CPU while it measured aipm
}

type bench struct {
	aipm, self, root string
	ctx              context.Context
	log              io.Writer

	deliveries, sends, reads, history, starts int
	hooks                                     int // P8's samples of each row
	webSamples, renders                       int // P9a's samples, P9b's navigations of each project
}

func (b *bench) progress(format string, args ...any) {
	fmt.Fprintf(b.log, "bench: "+format+"\n", args...)
}

// project makes a fresh project with the given AI agents and their passkeys.
func (b *bench) project(name string, agents ...string) (*fsstore.Store, map[string]string, error) {
	dir := filepath.Join(b.root, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, nil, err
	}
	store, err := fsstore.Init(dir, name)
	if err != nil {
		return nil, nil, err
	}
	keys := map[string]string{}
	for _, a := range agents {
		if keys[a], err = store.AddAgent(b.ctx, fsstore.NewAgent{ID: a, Type: fsstore.AgentAI}); err != nil {
			return nil, nil, err
		}
	}
	return store, keys, nil
}

// server is one `aipm serve` process and its client session.
type server struct {
	cs             *mcp.ClientSession
	cmd            *exec.Cmd
	token          string
	agent, passkey string
}

// serve starts aipm serve in store's project and opens a chat session for
// agent (through a trigger, as the watcher would write it).
func (b *bench) serve(store *fsstore.Store, agent, passkey string, stderr io.Writer) (*server, error) {
	return b.serveOver(b.localLink(), store, agent, passkey, stderr)
}

func (s *server) call(ctx context.Context, tool string, args map[string]any, out any) error {
	args["session_token"] = s.token
	return callTool(ctx, s.cs, tool, args, out)
}

func (s *server) close() { s.cs.Close() }

// callTool calls a tool and decodes its structured result into out.
func callTool(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any, out any) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	if res.IsError {
		var text []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text = append(text, tc.Text)
			}
		}
		return fmt.Errorf("%s: %s", tool, strings.Join(text, " "))
	}
	if out == nil {
		return nil
	}
	data, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}

// percentile returns the p-th percentile of sorted durations.
func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, len(d)*p/100)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func signedMs(d time.Duration) string { return fmt.Sprintf("%+.2f ms", float64(d.Microseconds())/1000) }

// lineCounter is a writer (a server's stderr) that counts lines containing
// want and lets a waiter block until the count passes a value.
type lineCounter struct {
	want string
	mu   sync.Mutex
	cond *sync.Cond
	n    int
	part []byte
}

func newLineCounter(want string) *lineCounter {
	c := &lineCounter{want: want}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.part = append(c.part, p...)
	for {
		i := slices.Index(c.part, '\n')
		if i < 0 {
			break
		}
		if strings.Contains(string(c.part[:i]), c.want) {
			c.n++
			c.cond.Broadcast()
		}
		c.part = c.part[i+1:]
	}
	return len(p), nil
}

func (c *lineCounter) waitPast(n int) {
	c.mu.Lock()
	for c.n <= n {
		c.cond.Wait()
	}
	c.mu.Unlock()
}

func (c *lineCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// delivery is P1: A's send_message issued -> B's waiting get_next_action
// returns, two server processes; beside a bare append+fsync in this process
// waking an inotify reader in another, one floor sample after each aipm
// sample so that both see the same machine. P1r times from the send's
// return instead (B often returns first: negative latencies). P1i is the
// same wake for an interrupt: written (as aipm interrupt does) -> B's
// waiting get_next_action answers with it.
func (b *bench) delivery() ([]Row, error) {
	b.progress("P1: %d deliveries and %d interrupts between two aipm serve processes, interleaved with the floor", b.deliveries, b.deliveries)
	store, keys, err := b.project("p1", "a", "b")
	if err != nil {
		return nil, err
	}
	waiting := newLineCounter("msg=waiting")
	sa, err := b.serve(store, "a", keys["a"], io.Discard)
	if err != nil {
		return nil, err
	}
	defer sa.close()
	sb, err := b.serve(store, "b", keys["b"], waiting)
	if err != nil {
		return nil, err
	}
	defer sb.close()
	floor, err := b.newDeliveryFloor("p1-floor")
	if err != nil {
		return nil, err
	}
	defer floor.close()
	var fromStart, fromReturn, interrupts, floorStart, floorReturn []time.Duration
	var usage cpuUsage
	for i := 0; i < b.deliveries; i++ {
		usage.start()
		sent, returned, err := b.wake(sb, waiting, "get_pending_messages", func() error {
			return sa.call(b.ctx, "send_message", map[string]any{"target_agent_id": "b", "content": "ping " + strconv.Itoa(i)}, nil)
		})
		usage.stop()
		if err != nil {
			return nil, err
		}
		fromStart, fromReturn = append(fromStart, sent), append(fromReturn, returned)
		if err := sb.call(b.ctx, "get_pending_messages", map[string]any{}, nil); err != nil {
			return nil, err
		}
		interrupted, _, err := b.wake(sb, waiting, "INTERRUPT", func() error {
			_, _, err := store.WriteInterrupt(b.ctx, fsstore.Interruption{Agent: "b", By: "a", Reason: "sample " + strconv.Itoa(i)})
			return err
		})
		if err != nil {
			return nil, err
		}
		interrupts = append(interrupts, interrupted)
		if err := sb.call(b.ctx, "get_notifications", map[string]any{}, nil); err != nil {
			return nil, err
		}
		fs, fr, err := floor.sample()
		if err != nil {
			return nil, err
		}
		floorStart, floorReturn = append(floorStart, fs), append(floorReturn, fr)
	}
	row := func(id, what string, lat, floor []time.Duration) Row {
		slices.Sort(lat)
		slices.Sort(floor)
		over := percentile(lat, 99) - percentile(floor, 99)
		return Row{
			id: id, what: fmt.Sprintf("%s, %d samples", what, len(lat)),
			aipm:     ms(percentile(lat, 50)) + " / " + ms(percentile(lat, 99)),
			floor:    ms(percentile(floor, 50)) + " / " + ms(percentile(floor, 99)),
			compared: "p99 " + signedMs(over), target: "p99 <= floor + 1 ms", met: over <= time.Millisecond,
			cpu: usage.String(),
		}
	}
	return []Row{
		row("P1", "delivery p50/p99: send issued -> receiver returns", fromStart, floorStart),
		row("P1r", "delivery p50/p99: send returns -> receiver returns", fromReturn, floorReturn),
		row("P1i", "interrupt p50/p99: written -> receiver's wait returns", interrupts, floorStart),
	}, nil
}

// wake times one wake of sb's waiting get_next_action: cause runs once
// sb's server logs that it waits; the times are from cause's start and
// from its return to the moment the wait answered. The answer must name
// want: the action, or the text of an error result (an interrupt).
func (b *bench) wake(sb *server, waiting *lineCounter, want string, cause func() error) (fromStart, fromReturn time.Duration, err error) {
	before := waiting.count()
	woke := make(chan time.Time, 1)
	errc := make(chan error, 1)
	go func() {
		var out struct{ Action string }
		err := sb.call(b.ctx, "get_next_action", map[string]any{"wait_seconds": 50}, &out)
		woke <- time.Now()
		switch {
		case err != nil && strings.Contains(err.Error(), want):
			err = nil
		case err == nil && out.Action != want:
			err = fmt.Errorf("get_next_action answered %q, want %s", out.Action, want)
		}
		errc <- err
	}()
	waiting.waitPast(before) // B's server is in its wait
	started := time.Now()
	if err := cause(); err != nil {
		return 0, 0, err
	}
	returned := time.Now()
	t := <-woke
	if err := <-errc; err != nil {
		return 0, 0, err
	}
	return t.Sub(started), t.Sub(returned), nil
}

// deliveryFloor appends+fsyncs in this process and times how long a reader
// process blocked on inotify takes to wake (it reports its wall clock, which
// both processes share).
type deliveryFloor struct {
	cmd   *exec.Cmd
	lines *bufio.Scanner
	f     *os.File
}

func (b *bench) newDeliveryFloor(name string) (*deliveryFloor, error) {
	dir := filepath.Join(b.root, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "chat.jsonl")
	cmd := exec.CommandContext(b.ctx, b.self, "bench-floor-reader", path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	fl := &deliveryFloor{cmd: cmd, lines: bufio.NewScanner(stdout)}
	if !fl.lines.Scan() || fl.lines.Text() != "ready" {
		fl.close()
		return nil, fmt.Errorf("floor reader did not start: %v", fl.lines.Err())
	}
	if fl.f, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		fl.close()
		return nil, err
	}
	return fl, nil
}

// sample is one floor delivery, timed from the start of the append (as
// aipm's from the start of the send) and from the fsync's return.
func (fl *deliveryFloor) sample() (fromStart, fromReturn time.Duration, err error) {
	sent := time.Now()
	if _, err := fl.f.WriteString(`{"id":"msg_floor","content":"ping"}` + "\n"); err != nil {
		return 0, 0, err
	}
	if err := fl.f.Sync(); err != nil {
		return 0, 0, err
	}
	returned := time.Now()
	if !fl.lines.Scan() {
		return 0, 0, fmt.Errorf("floor reader stopped: %v", fl.lines.Err())
	}
	ns, err := strconv.ParseInt(fl.lines.Text(), 10, 64)
	if err != nil {
		return 0, 0, err
	}
	woke := time.Unix(0, ns)
	return woke.Sub(sent), woke.Sub(returned), nil
}

func (fl *deliveryFloor) close() {
	if fl.f != nil {
		fl.f.Close()
	}
	fl.cmd.Process.Kill()
	fl.cmd.Wait()
}

// cpuUsage sums this process's CPU time (the bench client's) and the wall
// time over the phases it is started and stopped around.
type cpuUsage struct {
	cpu, wall time.Duration
	cpu0      time.Duration
	wall0     time.Time
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (u *cpuUsage) start() { u.cpu0, u.wall0 = processCPU(), time.Now() }

func (u *cpuUsage) stop() {
	u.cpu += processCPU() - u.cpu0
	u.wall += time.Since(u.wall0)
}

// String is the client's CPU as a share of one core over its phases.
func (u *cpuUsage) String() string {
	if u.wall <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%% of a core", 100*float64(u.cpu)/float64(u.wall))
}

// FloorReader is the floor's other process: it prints "ready", then
// its wall clock each time inotify reports a write to the file.
func FloorReader(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return errors.New("usage: bench-floor-reader FILE")
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.Add(filepath.Dir(args[0])); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "ready")
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Name == args[0] && ev.Has(fsnotify.Write) {
				fmt.Fprintln(stdout, time.Now().UnixNano())
			}
		case err := <-w.Errors:
			return err
		}
	}
}

// throughput is P2: eight servers sending at once, fsync on; beside eight
// processes each doing the bare dual write (two fsync'd appends).
func (b *bench) throughput() ([]Row, error) {
	const n = 8
	b.progress("P2: %d servers x %d send_message", n, b.sends)
	agents := senders(n)
	store, keys, err := b.project("p2", agents...)
	if err != nil {
		return nil, err
	}
	servers := make([]*server, n)
	for i, a := range agents {
		if servers[i], err = b.serve(store, a, keys[a], io.Discard); err != nil {
			return nil, err
		}
		defer servers[i].close()
	}
	dir := filepath.Join(b.root, "p2-floor")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	// Rounds alternate aipm and the floor, so that both see the same machine.
	const rounds = 4
	per := max(b.sends/rounds, 1)
	var aipmTime, floorTime, rpcTime time.Duration
	var usage cpuUsage
	for r := 0; r < rounds; r++ {
		start := time.Now()
		usage.start()
		if err := b.sendAll(servers, agents, per); err != nil {
			return nil, err
		}
		usage.stop()
		aipmTime += time.Since(start)

		// The writers start, then are all told to go: their start-up is not timed.
		var cmds []*exec.Cmd
		var gos []io.WriteCloser
		for i := 0; i < n; i++ {
			in, out := filepath.Join(dir, fmt.Sprintf("s%d.jsonl", (i+1)%n)), filepath.Join(dir, fmt.Sprintf("s%d.jsonl", i))
			cmd := exec.CommandContext(b.ctx, b.self, "bench-floor-writer", in, out, strconv.Itoa(per))
			cmd.Stderr = b.log
			stdin, err := cmd.StdinPipe()
			if err != nil {
				return nil, err
			}
			if err := cmd.Start(); err != nil {
				return nil, err
			}
			cmds, gos = append(cmds, cmd), append(gos, stdin)
		}
		time.Sleep(200 * time.Millisecond) // let them reach their read of "go"
		start = time.Now()
		for _, g := range gos {
			io.WriteString(g, "go\n")
			g.Close()
		}
		for _, cmd := range cmds {
			if err := cmd.Wait(); err != nil {
				return nil, fmt.Errorf("floor writer: %w", err)
			}
		}
		floorTime += time.Since(start)

		took, err := b.rpcFloor(dir, n, per)
		if err != nil {
			return nil, err
		}
		rpcTime += took
	}
	aipmRate := float64(n*per*rounds) / aipmTime.Seconds()
	floorRate := float64(n*per*rounds) / floorTime.Seconds()
	rpcRate := float64(n*per*rounds) / rpcTime.Seconds()
	ratio := aipmRate / floorRate
	return []Row{{
		id: "P2rpc", what: "RPC floor: 8 line-protocol servers on pipes doing the dual write",
		aipm: fmt.Sprintf("%.0f msg/s", rpcRate), floor: fmt.Sprintf("%.0f msg/s", floorRate),
		compared: fmt.Sprintf("%.0f%% of floor; aipm %.0f%% of it", 100*rpcRate/floorRate, 100*aipmRate/rpcRate), target: "reference", met: true,
	}, {
		id: "P2", what: fmt.Sprintf("send_message throughput, 8 servers, fsync, %d sends", n*per*rounds),
		aipm: fmt.Sprintf("%.0f msg/s", aipmRate), floor: fmt.Sprintf("%.0f msg/s", floorRate),
		compared: fmt.Sprintf("%.0f%% of floor", 100*ratio), target: ">= 60% of floor", met: ratio >= 0.6,
		cpu: usage.String(),
	}}, nil
}

// senders are P2's agents: s0 to s(n-1).
func senders(n int) []string {
	agents := make([]string, n)
	for i := range agents {
		agents[i] = fmt.Sprintf("s%d", i)
	}
	return agents
}

// rpcFloor is P2's second reference: n line-protocol servers on pipes, each
// doing the bare dual write for every line this process sends it and
// answering "ok", per lines each; it returns the time the sends took.
func (b *bench) rpcFloor(dir string, n, per int) (time.Duration, error) {
	type peer struct {
		cmd *exec.Cmd
		in  io.WriteCloser
		out *bufio.Reader
	}
	peers := make([]peer, n)
	for i := range peers {
		in, out := filepath.Join(dir, fmt.Sprintf("r%d.jsonl", (i+1)%n)), filepath.Join(dir, fmt.Sprintf("r%d.jsonl", i))
		cmd := exec.CommandContext(b.ctx, b.self, "bench-floor-server", in, out)
		cmd.Stderr = b.log
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return 0, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return 0, err
		}
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		peers[i] = peer{cmd: cmd, in: stdin, out: bufio.NewReader(stdout)}
		defer cmd.Wait()
		defer stdin.Close()
	}
	for _, p := range peers { // their start-up is not timed
		if ready, err := p.out.ReadString('\n'); err != nil || ready != "ready\n" {
			return 0, fmt.Errorf("floor server did not start: %q %v", ready, err)
		}
	}
	line := []byte(`{"id":"msg_01M7YZWACRA0328GMTHNDHB18Z","senderId":"s0","content":"load","createdAt":"2026-11-21T12:00:00.000000Z"}` + "\n")
	start := time.Now()
	errc := make(chan error, n)
	for _, p := range peers {
		go func() {
			for k := 0; k < per; k++ {
				if _, err := p.in.Write(line); err != nil {
					errc <- err
					return
				}
				if reply, err := p.out.ReadString('\n'); err != nil || reply != "ok\n" {
					errc <- fmt.Errorf("floor server answered %q: %v", reply, err)
					return
				}
			}
			errc <- nil
		}()
	}
	for range peers {
		if err := <-errc; err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// FloorServer is the RPC floor's server: for every line on stdin,
// the bare dual write, then "ok".
func FloorServer(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) != 2 {
		return errors.New("usage: bench-floor-server IN OUT")
	}
	in := bufio.NewReader(os.Stdin)
	if _, err := io.WriteString(stdout, "ready\n"); err != nil {
		return err
	}
	for {
		line, err := in.ReadBytes('\n')
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := dualWrite(args[:2], line); err != nil {
			return err
		}
		if _, err := io.WriteString(stdout, "ok\n"); err != nil {
			return err
		}
	}
}

// dualWrite is the bare dual write: line appended and fsynced to each file.
func dualWrite(paths []string, line []byte) error {
	for _, path := range paths {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		_, werr := f.Write(line)
		if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
			return err
		}
	}
	return nil
}

// FloorWriter is P2's floor worker: N times, the same line appended
// and fsynced to two files, the bare dual write.
func FloorWriter(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) != 3 {
		return errors.New("usage: bench-floor-writer IN OUT N")
	}
	n, err := strconv.Atoi(args[2])
	if err != nil {
		return fmt.Errorf("bench-floor-writer: N: %w", err)
	}
	line := []byte(`{"id":"msg_01M7YZWACRA0328GMTHNDHB18Z","senderId":"s0","content":"load","createdAt":"2026-11-21T12:00:00.000000Z"}` + "\n")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil { // "go"
		return fmt.Errorf("bench-floor-writer: wait for go: %w", err)
	}
	for i := 0; i < n; i++ {
		if err := dualWrite(args[:2], line); err != nil {
			return err
		}
	}
	return nil
}

// history1M is P3 (get_pending_messages with a long history against a short
// one) and P5 (resident memory of the server with that history).
func (b *bench) history1M() ([]Row, error) {
	b.progress("P3/P5: get_pending_messages after %d lines of history vs 100", b.history)
	long, rssLong, err := b.pendingLatency("p3-long", b.history)
	if err != nil {
		return nil, err
	}
	short, rssShort, err := b.pendingLatency("p3-short", 100)
	if err != nil {
		return nil, err
	}
	ratio := float64(percentile(long, 50)) / float64(percentile(short, 50))
	lines := fmt.Sprintf("%d", b.history)
	if b.history == 1_000_000 {
		lines = "1,000,000"
	}
	memory := Row{
		id: "P5", what: "aipm serve resident memory (peak), " + lines + " lines",
		aipm: fmt.Sprintf("%.1f MB", rssLong), floor: fmt.Sprintf("%.1f MB (100 lines)", rssShort),
		compared: fmt.Sprintf("%+.1f MB", rssLong-rssShort), target: "<= 30 MB", met: rssLong <= 30,
	}
	return []Row{{
		id: "P3", what: "get_pending_messages p50, " + lines + " lines vs 100",
		aipm: ms(percentile(long, 50)), floor: ms(percentile(short, 50)) + " (100 lines)",
		compared: fmt.Sprintf("%.2fx", ratio), target: "<= 1.5x", met: ratio <= 1.5,
	}, memory}, nil
}

// pendingLatency fills agent r's chat log with history lines that r has
// read, then times get_pending_messages, each after one new message; it
// returns the latencies and the server's peak resident memory in MB.
func (b *bench) pendingLatency(name string, history int) ([]time.Duration, float64, error) {
	store, keys, err := b.project(name, "r", "w")
	if err != nil {
		return nil, 0, err
	}
	path, _ := store.ChatPath("r")
	if err := writeHistory(store, path, history); err != nil {
		return nil, 0, err
	}
	// r has read all of it: pass the cursor over every line once.
	if _, err := store.ReadUnread(b.ctx, "r", fsstore.StreamChat, fsstore.ReadOptions{Match: func(fsstore.Record) bool { return false }}); err != nil {
		return nil, 0, err
	}
	return b.timePending(store, keys)
}

// timePending times get_pending_messages in r's chat session, each after
// one new message from w; it returns the latencies and the server's peak
// resident memory in MB.
func (b *bench) timePending(store *fsstore.Store, keys map[string]string) ([]time.Duration, float64, error) {
	cfg, err := store.LoadConfig()
	if err != nil {
		return nil, 0, err
	}
	s, err := b.serve(store, "r", keys["r"], io.Discard)
	if err != nil {
		return nil, 0, err
	}
	defer s.close()
	var lat []time.Duration
	for i := 0; i < b.reads; i++ {
		if _, err := store.Send(b.ctx, cfg, fsstore.OutgoingMessage{From: "w", To: "r", Content: "new " + strconv.Itoa(i)}); err != nil {
			return nil, 0, err
		}
		var out struct {
			Messages []json.RawMessage `json:"pending_messages"`
		}
		start := time.Now()
		if err := s.call(b.ctx, "get_pending_messages", map[string]any{}, &out); err != nil {
			return nil, 0, err
		}
		lat = append(lat, time.Since(start))
		if len(out.Messages) != 1 {
			return nil, 0, fmt.Errorf("get_pending_messages returned %d messages, want 1", len(out.Messages))
		}
	}
	slices.Sort(lat)
	return lat, peakRSS(s.cmd.Process.Pid), nil
}

// writeHistory writes n chat lines as other agents' messages.
func writeHistory(store *fsstore.Store, path string, n int) error {
	return fsstore.FixturesOf(store).Lines(path, n, func(i int) any {
		return fsstore.Message{ID: fsstore.NewID(fsstore.PrefixMessage), SenderID: "w", Content: fmt.Sprintf("history line %d: a message of ordinary length, about like this one", i), CreatedAt: "2026-11-21T12:00:00.000000Z"}
	})
}

// peakRSS reads a process's peak resident set size (VmHWM) in MB.
func peakRSS(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return -1
}

// startup is P4: starting aipm serve to its first response that reads the
// project (authenticate: config, passkey, sessions, the chat-work check),
// beside starting `aipm version` (the process start itself).
func (b *bench) startup() ([]Row, error) {
	b.progress("P4: %d server starts", b.starts)
	store, keys, err := b.project("p4", "a")
	if err != nil {
		return nil, err
	}
	var serveLat, floorLat []time.Duration
	var usage cpuUsage
	for i := 0; i < b.starts; i++ {
		start := time.Now()
		if err := exec.Command(b.aipm, "version").Run(); err != nil {
			return nil, err
		}
		floorLat = append(floorLat, time.Since(start))

		if err := store.Triggers().Write(b.ctx, fsstore.Trigger{Agent: "a", Purpose: fsstore.PurposeChat, Reason: "bench"}); err != nil {
			return nil, err
		}
		start = time.Now()
		usage.start()
		cmd := exec.Command(b.aipm, "--dir", store.ProjectDir(), "serve")
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "aipm-bench"}, nil).Connect(b.ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			return nil, err
		}
		if err := callTool(b.ctx, cs, "authenticate", map[string]any{"agent_id": "a", "passkey": keys["a"]}, nil); err != nil {
			return nil, err
		}
		serveLat = append(serveLat, time.Since(start))
		usage.stop()
		cs.Close()
	}
	slices.Sort(serveLat)
	slices.Sort(floorLat)
	p50 := percentile(serveLat, 50)
	return []Row{{
		id: "P4", what: "aipm serve start -> first authenticate p50",
		aipm: ms(p50), floor: ms(percentile(floorLat, 50)) + " (aipm version)",
		compared: signedMs(p50 - percentile(floorLat, 50)), target: "<= 20 ms", met: p50 <= 20*time.Millisecond,
		cpu: usage.String(),
	}}, nil
}

// piledUp is P6 (and P5 at its large case): the p50 of a call with many
// records piled up against the same call with 100 of them, each in its own
// project and server. fill piles up n records for agent r (whose chat
// session the server holds); call makes one timed call; between, when not
// nil, runs untimed before each call.
func (b *bench) piledUp(id, what string, large int, fill func(store *fsstore.Store, n int) error, call, between func(s *server) error) ([]Row, error) {
	b.progress("%s: %s, %d vs 100", id, what, large)
	measure := func(n int) ([]time.Duration, float64, cpuUsage, error) {
		var usage cpuUsage
		store, keys, err := b.project(fmt.Sprintf("%s-%d", strings.ToLower(id), n), "r", "w")
		if err != nil {
			return nil, 0, usage, err
		}
		if err := fill(store, n); err != nil {
			return nil, 0, usage, err
		}
		s, err := b.serve(store, "r", keys["r"], io.Discard)
		if err != nil {
			return nil, 0, usage, err
		}
		defer s.close()
		var lat []time.Duration
		for i := 0; i < b.reads; i++ {
			if between != nil {
				if err := between(s); err != nil {
					return nil, 0, usage, err
				}
			}
			usage.start()
			start := time.Now()
			if err := call(s); err != nil {
				return nil, 0, usage, err
			}
			lat = append(lat, time.Since(start))
			usage.stop()
		}
		slices.Sort(lat)
		return lat, peakRSS(s.cmd.Process.Pid), usage, nil
	}
	big, rss, usage, err := measure(large)
	if err != nil {
		return nil, err
	}
	small, _, _, err := measure(100)
	if err != nil {
		return nil, err
	}
	ratio := float64(percentile(big, 50)) / float64(percentile(small, 50))
	return []Row{{
		id: id, what: fmt.Sprintf("%s p50, %d vs 100 (slowest %s)", what, large, ms(big[len(big)-1])),
		aipm: ms(percentile(big, 50)), floor: ms(percentile(small, 50)) + " (100)",
		compared: fmt.Sprintf("%.2fx, RSS %.1f MB", ratio, rss), target: "<= 1.5x, RSS <= 30 MB", met: ratio <= 1.5 && rss <= 30,
		cpu: usage.String(),
	}}, nil
}

// ownSent is P6a: get_next_action when r's chat log holds n of r's own sent
// copies past its cursor and nothing unread but one notification (so the
// call answers at once, after the chat-work check has looked past them).
func (b *bench) ownSent() ([]Row, error) {
	return b.piledUp("P6a", "get_next_action over own sent copies", b.history, b.fillOwnSent, b.nextActionNotified, nil)
}

// fillOwnSent writes n of r's own sent copies to r's chat log, and one
// notification.
func (b *bench) fillOwnSent(store *fsstore.Store, n int) error {
	path, _ := store.ChatPath("r")
	if err := fsstore.FixturesOf(store).Lines(path, n, func(i int) any {
		return fsstore.Message{ID: fsstore.NewID(fsstore.PrefixMessage), SenderID: "r", ReceiverID: "w", Content: fmt.Sprintf("sent line %d: a message of ordinary length, about like this one", i), CreatedAt: "2026-11-21T12:00:00.000000Z"}
	}); err != nil {
		return err
	}
	_, err := store.Notify(b.ctx, "r", fsstore.Notification{Message: "keeps get_next_action from waiting"})
	return err
}

// nextActionNotified calls get_next_action, which answers
// get_notifications at once.
func (b *bench) nextActionNotified(s *server) error {
	var out struct{ Action string }
	if err := s.call(b.ctx, "get_next_action", map[string]any{}, &out); err != nil {
		return err
	}
	if out.Action != fsstore.ActGetNotifications {
		return fmt.Errorf("get_next_action answered %q, want %s", out.Action, fsstore.ActGetNotifications)
	}
	return nil
}

// unreadNotifications is P6b: a gated call (get_my_task) when r has n
// unread notifications.
func (b *bench) unreadNotifications() ([]Row, error) {
	n := 100_000
	if b.history < 1_000_000 {
		n = 10_000
	}
	return b.piledUp("P6b", "gated call (get_my_task) with unread notifications", n, func(store *fsstore.Store, n int) error {
		path, _ := store.NotificationsPath("r")
		created := time.Now().UTC()
		return fsstore.FixturesOf(store).Lines(path, n, func(i int) any {
			return fsstore.Notification{ID: fsstore.NewID(fsstore.PrefixNotification), Type: fsstore.NotifyInfo, Message: fmt.Sprintf("notification %d", i), CreatedAt: created}
		})
	}, func(s *server) error {
		return s.call(b.ctx, "get_my_task", map[string]any{}, nil)
	}, nil)
}

// piled is the size of P6's large task and session piles.
func (b *bench) piled() int {
	if b.history < 1_000_000 {
		return 1_000
	}
	return 10_000
}

// listTasks is P6c: list_tasks with its default arguments (the newest 50)
// among n tasks.
func (b *bench) listTasks() ([]Row, error) {
	return b.piledUp("P6c", "list_tasks (default args) among tasks", b.piled(), writeTasks, func(s *server) error {
		var out struct {
			Tasks []json.RawMessage `json:"tasks"`
		}
		if err := s.call(b.ctx, "list_tasks", map[string]any{}, &out); err != nil {
			return err
		}
		if len(out.Tasks) != 50 {
			return fmt.Errorf("list_tasks returned %d tasks, want 50", len(out.Tasks))
		}
		return nil
	}, nil)
}

// myTask is P6d: get_my_task among n tasks, of which r has a few open.
func (b *bench) myTask() ([]Row, error) {
	return b.piledUp("P6d", "get_my_task among tasks", b.piled(), writeTasks, func(s *server) error {
		var out struct {
			Task     *struct{ ID string } `json:"task"`
			Assigned []json.RawMessage    `json:"assigned"`
		}
		if err := s.call(b.ctx, "get_my_task", map[string]any{}, &out); err != nil {
			return err
		}
		if out.Task == nil || len(out.Assigned) != 1 {
			return fmt.Errorf("get_my_task: task %v and %d others, want r's task in progress and 1 other", out.Task, len(out.Assigned))
		}
		return nil
	}, nil)
}

// authTasks is P6e: authenticate (purpose chosen from the work: r's task
// in progress) among n tasks; the session it opens is logged out untimed.
func (b *bench) authTasks() ([]Row, error) {
	return b.piledUp("P6e", "authenticate among tasks", b.piled(), writeTasks, b.authenticate(fsstore.PurposeTask), b.logout)
}

// authSessions is P6f: authenticate among n sessions of other agents (half
// live, half expired and left for the watcher's sweep), r having a task in
// progress.
func (b *bench) authSessions() ([]Row, error) {
	return b.piledUp("P6f", "authenticate among other agents' sessions", b.piled(), func(store *fsstore.Store, n int) error {
		if err := writeTasks(store, 4); err != nil {
			return err
		}
		return writeSessions(store, n)
	}, b.authenticate(fsstore.PurposeTask), b.logout)
}

// authOwnSent is P6g: authenticate when r's chat log holds n of its own
// sent copies and then one unread message (its chat-work check passes over
// the copies: once per process, the row's slowest call).
func (b *bench) authOwnSent() ([]Row, error) {
	return b.piledUp("P6g", "authenticate over own sent copies", b.history, func(store *fsstore.Store, n int) error {
		path, _ := store.ChatPath("r")
		return fsstore.FixturesOf(store).Lines(path, n+1, func(i int) any {
			if i == n {
				return fsstore.Message{ID: fsstore.NewID(fsstore.PrefixMessage), SenderID: "w", Content: "the one unread message", CreatedAt: "2026-11-21T12:00:00.000000Z"}
			}
			return fsstore.Message{ID: fsstore.NewID(fsstore.PrefixMessage), SenderID: "r", ReceiverID: "w", Content: fmt.Sprintf("sent line %d: a message of ordinary length, about like this one", i), CreatedAt: "2026-11-21T12:00:00.000000Z"}
		})
	}, b.authenticate(fsstore.PurposeChat), b.logout)
}

// authenticate is a timed call: authenticate as the server's agent without
// naming a purpose, expecting want; the new session's token replaces the
// server's.
func (b *bench) authenticate(want string) func(s *server) error {
	return func(s *server) error {
		var out struct {
			SessionToken string `json:"session_token"`
			Purpose      string `json:"purpose"`
		}
		if err := callTool(b.ctx, s.cs, "authenticate", map[string]any{"agent_id": s.agent, "passkey": s.passkey}, &out); err != nil {
			return err
		}
		if out.Purpose != want {
			return fmt.Errorf("authenticate chose %q, want %s", out.Purpose, want)
		}
		s.token = out.SessionToken
		return nil
	}
}

// logout ends the server's session, so that the next authenticate finds
// its purpose free again.
func (b *bench) logout(s *server) error {
	return s.call(b.ctx, "logout", map[string]any{}, nil)
}

// writeTasks writes n task files as a human's editor would (no aipm
// involved): most are done; the newest four are open, two for r (one in
// progress) and two for w.
func writeTasks(store *fsstore.Store, n int) error {
	now := time.Now().UTC()
	for i := range n {
		t := fsstore.Task{
			ID: fsstore.NewID(fsstore.PrefixTask), Title: fmt.Sprintf("task %d", i), Description: "a task of ordinary length, written for the benchmark",
			Status: fsstore.StatusDone, Priority: "normal", Assignee: []string{"r", "w"}[i%2], ApprovalStatus: fsstore.ApprovalApproved,
			StatusChangedBy: "w", StatusChangedAt: now, CreatedAt: now, UpdatedAt: now,
		}
		switch n - i {
		case 4:
			t.Status = fsstore.StatusInProgress
		case 3, 2, 1:
			t.Status = fsstore.StatusTodo
		}
		if err := fsstore.FixturesOf(store).Doc(fsstore.Tasks, t.ID, t); err != nil {
			return err
		}
	}
	return nil
}

// writeSessions writes n session files of 50 other agents, half live (of
// this process) and half expired an hour ago, without the session index
// (as an older aipm left them: the first authenticate builds it).
func writeSessions(store *fsstore.Store, n int) error {
	now := time.Now().UTC()
	for i := range n {
		ses := fsstore.Session{
			ID: fsstore.NewID(fsstore.PrefixSession), Agent: fmt.Sprintf("other%d", i%50), Purpose: []string{fsstore.PurposeChat, fsstore.PurposeTask}[i/50%2],
			TokenHash: strings.Repeat("0", 64), PID: os.Getpid(), CreatedAt: now, LastSeenAt: now, Idle: fsstore.Duration{Duration: time.Hour},
		}
		if i%2 == 1 {
			ses.LastSeenAt = now.Add(-2 * time.Hour)
		}
		if err := fsstore.FixturesOf(store).Doc(fsstore.Sessions, ses.ID, ses); err != nil {
			return err
		}
	}
	return nil
}
