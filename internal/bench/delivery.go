package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"aipm/fsstore"
)

// delivery is P1: A's send_message issued -> B's waiting get_next_action
// returns, two server processes; beside the relay floor (the same three
// process wake-ups, no MCP, no rules), one floor sample after each aipm
// sample so that both see the same machine. P1i is the same wake for an
// interrupt: written (as aipm interrupt does) -> B's waiting get_next_action
// answers with it, beside the relay's last two hops (the echo floor: this
// process appends with fsync, as aipm interrupt writes, and B echoes the
// line), the hops the interrupt takes. P1r times from the send's return
// instead (B often returns first: negative latencies), beside a bare
// append+fsync in this process waking an inotify reader in another, timed
// from the fsync's return.
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
	relay, err := b.newRelayFloor("p1-relay")
	if err != nil {
		return nil, err
	}
	defer relay.close()
	var fromStart, fromReturn, interrupts, relayed, echoed, floorReturn []time.Duration
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
		_, fr, err := floor.sample()
		if err != nil {
			return nil, err
		}
		rel, err := relay.sample(i)
		if err != nil {
			return nil, err
		}
		ech, err := relay.echoSample(i)
		if err != nil {
			return nil, err
		}
		floorReturn, relayed, echoed = append(floorReturn, fr), append(relayed, rel), append(echoed, ech)
	}
	// P1 and P1i are held to DESIGN's p50 and p99 above the relay floor's;
	// P1r, a view of P1 from the send's return, to the p99 alone.
	row := func(id, what string, lat, floor []time.Duration, floorName string, withP50 bool) Row {
		slices.Sort(lat)
		slices.Sort(floor)
		p50, over := percentile(lat, 50)-percentile(floor, 50), percentile(lat, 99)-percentile(floor, 99)
		checks := []check{atMost("p99 - floor p99", msOf(over), deliveryP99Over, "ms")}
		target := fmt.Sprintf("p99 <= floor + %g ms", float64(deliveryP99Over))
		compared := "p99 " + signedMs(over)
		if withP50 {
			checks = append([]check{atMost("p50 - floor p50", msOf(p50), deliveryP50Over, "ms")}, checks...)
			target = fmt.Sprintf("p50 <= floor + %g ms, %s", deliveryP50Over, target)
			compared = "p50 " + signedMs(p50) + ", " + compared
		}
		return Row{
			id: id, what: fmt.Sprintf("%s, %d samples", what, len(lat)),
			aipm:     ms(percentile(lat, 50)) + " / " + ms(percentile(lat, 99)),
			floor:    ms(percentile(floor, 50)) + " / " + ms(percentile(floor, 99)) + " (" + floorName + ")",
			compared: compared, target: target,
			cpu: usage.String(), aipmValues: latencies(lat), floorValues: latencies(floor),
		}.judged(checks...)
	}
	return []Row{
		row("P1", "delivery p50/p99: send issued -> receiver returns", fromStart, relayed, "relay floor", true),
		row("P1r", "delivery p50/p99: send returns -> receiver returns", fromReturn, floorReturn, "inotify wake", false),
		row("P1i", "interrupt p50/p99: written -> receiver's wait returns", interrupts, echoed, "echo floor", true),
	}, nil
}

// wake times one wake of sb's waiting get_next_action: cause runs once
// sb's server logs that it waits; the times are from cause's start and
// from its return to the moment the wait answered. The answer must name
// want: the action, or the text of an error result (an interrupt). A call
// that ends before its server logged the wait (an error, a server gone)
// ends the wait for the log line with it.
func (b *bench) wake(sb *server, waiting *lineCounter, want string, cause func() error) (fromStart, fromReturn time.Duration, err error) {
	before := waiting.count()
	woke := make(chan time.Time, 1)
	errc := make(chan error, 1)
	logged, answered := context.WithCancelCause(b.ctx)
	defer answered(nil)
	go func() {
		var out struct{ Action string }
		err := sb.call(b.ctx, "get_next_action", map[string]any{"wait_seconds": 50}, &out)
		woke <- time.Now()
		if err != nil {
			answered(fmt.Errorf("get_next_action of %s ended: %w", sb.agent, err))
		} else {
			answered(fmt.Errorf("get_next_action of %s answered %q at once", sb.agent, out.Action))
		}
		switch {
		case err != nil && strings.Contains(err.Error(), want):
			err = nil
		case err == nil && out.Action != want:
			err = fmt.Errorf("get_next_action answered %q, want %s", out.Action, want)
		}
		errc <- err
	}()
	b.doing.set(fmt.Sprintf("waiting for %s's get_next_action to wait", sb.agent))
	if err := waiting.waitPast(logged, before); err != nil { // B's server is in its wait
		return 0, 0, err
	}
	b.doing.set(fmt.Sprintf("waiting for %s's get_next_action to answer %s", sb.agent, want))
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
	cmd := b.command(b.self, "bench-floor-reader", path)
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

// FloorReader is the floor's other process: it prints "ready", then
// its wall clock each time inotify reports a write to the file.
func FloorReader(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return errors.New("usage: bench-floor-reader FILE")
	}
	return eachWrite(ctx, args[0], stdout, func() error {
		_, err := fmt.Fprintln(stdout, time.Now().UnixNano())
		return err
	})
}

// eachWrite prints "ready" once inotify watches file's directory, then
// calls wrote each time it reports a write to file, until ctx ends.
func eachWrite(ctx context.Context, file string, stdout io.Writer, wrote func() error) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.Add(filepath.Dir(file)); err != nil {
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
			if ev.Name == file && ev.Has(fsnotify.Write) {
				if err := wrote(); err != nil {
					return err
				}
			}
		case err := <-w.Errors:
			return err
		}
	}
}

// relayFloor is P1's and P1i's floor: the same three process wake-ups as a
// delivery, without MCP and without aipm's rules. The bench writes a line
// to process A's stdin (as the client writes send_message to A's server), A
// appends it with fsync (as A's send), B wakes on inotify and writes the
// line back on its stdout (as B's waiting get_next_action answers).
type relayFloor struct {
	appender, echo *exec.Cmd
	in             io.WriteCloser
	out            *bufio.Scanner
	file           *os.File // the file, appended to by this process (echo)
}

func (b *bench) newRelayFloor(name string) (*relayFloor, error) {
	dir := filepath.Join(b.root, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "chat.jsonl")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		return nil, err
	}
	fl := &relayFloor{appender: b.command(b.self, "bench-floor-relay-append", path), echo: b.command(b.self, "bench-floor-relay-echo", path)}
	var err error
	if fl.in, err = fl.appender.StdinPipe(); err != nil {
		return nil, err
	}
	fl.appender.Stderr, fl.echo.Stderr = b.log, b.log
	stdout, err := fl.echo.StdoutPipe()
	if err != nil {
		fl.close()
		return nil, err
	}
	fl.out = bufio.NewScanner(stdout)
	if err := fl.echo.Start(); err != nil {
		return nil, err
	}
	if !fl.out.Scan() || fl.out.Text() != "ready" { // B watches before A writes
		fl.close()
		return nil, fmt.Errorf("relay floor's reader did not start: %v", fl.out.Err())
	}
	if err := fl.appender.Start(); err != nil {
		fl.close()
		return nil, err
	}
	if fl.file, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		fl.close()
		return nil, err
	}
	return fl, nil
}

// sample is one relay: from the line written to A to the line read back
// from B.
func (fl *relayFloor) sample(i int) (time.Duration, error) {
	return fl.relay(i, func(line string) error {
		if _, err := io.WriteString(fl.in, line+"\n"); err != nil {
			return fmt.Errorf("relay floor's appender: %w", err)
		}
		return nil
	})
}

// echoSample is P1i's floor, the relay's last two hops: this process appends the
// line with fsync (as aipm interrupt writes its notice), B wakes and
// writes it back.
func (fl *relayFloor) echoSample(i int) (time.Duration, error) {
	return fl.relay(i, func(line string) error {
		if _, err := fl.file.WriteString(line + "\n"); err != nil {
			return err
		}
		return fl.file.Sync()
	})
}

// relay times send's line to its echo from B.
func (fl *relayFloor) relay(i int, send func(line string) error) (time.Duration, error) {
	line := `{"id":"msg_floor","content":"ping ` + strconv.Itoa(i) + `"}`
	start := time.Now()
	if err := send(line); err != nil {
		return 0, err
	}
	if !fl.out.Scan() {
		return 0, fmt.Errorf("relay floor's reader stopped: %v", fl.out.Err())
	}
	took := time.Since(start)
	if got := fl.out.Text(); got != line {
		return 0, fmt.Errorf("relay floor's reader echoed %q, want %q", got, line)
	}
	return took, nil
}

func (fl *relayFloor) close() {
	if fl.in != nil {
		fl.in.Close()
	}
	if fl.file != nil {
		fl.file.Close()
	}
	for _, cmd := range []*exec.Cmd{fl.appender, fl.echo} {
		if cmd.Process != nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}
}

// FloorRelayAppend is the relay floor's process A: each line on stdin
// appended to FILE with fsync.
func FloorRelayAppend(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return errors.New("usage: bench-floor-relay-append FILE")
	}
	f, err := os.OpenFile(args[0], os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	in := bufio.NewReader(os.Stdin)
	for {
		line, err := in.ReadBytes('\n')
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := f.Write(line); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
	}
}

// FloorRelayEcho is the relay floor's process B: it prints "ready", then,
// each time inotify reports a write to FILE, what was appended since.
func FloorRelayEcho(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return errors.New("usage: bench-floor-relay-echo FILE")
	}
	f, err := os.Open(args[0])
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	return eachWrite(ctx, args[0], stdout, func() error {
		for {
			n, err := f.Read(buf)
			if n > 0 {
				if _, werr := stdout.Write(buf[:n]); werr != nil {
					return werr
				}
			}
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
		}
	})
}
