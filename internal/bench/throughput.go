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
	"strconv"
	"time"
)

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
			cmd := b.command(b.self, "bench-floor-writer", in, out, strconv.Itoa(per))
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
		aipmValues: throughputOf(rpcRate), floorValues: throughputOf(floorRate),
	}, Row{
		id: "P2", what: fmt.Sprintf("send_message throughput, 8 servers, fsync, %d sends", n*per*rounds),
		aipm: fmt.Sprintf("%.0f msg/s", aipmRate), floor: fmt.Sprintf("%.0f msg/s", floorRate),
		compared: fmt.Sprintf("%.0f%% of floor, %.0f%% of the RPC floor", 100*ratio, 100*aipmRate/rpcRate),
		target:   fmt.Sprintf(">= %.0f%% of floor, >= %.0f%% of the RPC floor", 100*sendsOfDualWrite, 100*sendsOfRPC),
		cpu:      usage.String(), aipmValues: throughputOf(aipmRate), floorValues: throughputOf(floorRate),
	}.judged(atLeast("aipm / floor", ratio, sendsOfDualWrite, "x"), atLeast("aipm / RPC floor", aipmRate/rpcRate, sendsOfRPC, "x"))}, nil
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
		cmd := b.command(b.self, "bench-floor-server", in, out)
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
