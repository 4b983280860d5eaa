package mcpserver_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/internal/testenv"
	"aipm/mcpserver"
)

// What one send_message costs a long-lived aipm serve, measured without a
// clock: the system calls of the serving process per send (strace -f -c),
// and in process the CPU and allocations of the gate and Send
// (-cpuprofile, -memprofile). The sender is a chat session of coder; the
// receiver, reviewer, has a live chat session in another process, as in
// P1 and P2 (DESIGN section 13). With inbox=busy the receiver answers
// every send (written between the sends, outside what is measured), so
// that every answer of the sender has a new message to announce, as in
// P2; with inbox=quiet nothing arrives for the sender.

// sendInboxes are the two cases of the send benchmarks.
var sendInboxes = []string{"quiet", "busy"}

// BenchmarkSendSyscalls reports the system calls of one aipm serve per
// send_message, by name (calls/send, and failed calls as name-err/send):
// the difference between a run of 1+N sends and a run of 1, divided by N
// (AIPM_BENCH_SENDS, default 200). It needs strace.
//
//	go test -run '^$' -bench SendSyscalls -benchtime 1x ./mcpserver
func BenchmarkSendSyscalls(b *testing.B) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		testenv.SkipMissing(b, "strace")
	}
	n := envInt("AIPM_BENCH_SENDS", 200)
	for _, inbox := range sendInboxes {
		b.Run("inbox="+inbox, func(b *testing.B) {
			for b.Loop() {
				one := sendSyscalls(b, strace, inbox, 1)
				many := sendSyscalls(b, strace, inbox, 1+n)
				var names []string
				for name := range many {
					names = append(names, name)
				}
				slices.Sort(names)
				b.ReportMetric(0, "ns/op")
				total := 0.0
				for _, name := range names {
					per := float64(many[name]-one[name]) / float64(n)
					if per >= 0.05 {
						b.ReportMetric(per, name+"/send")
					}
					if !strings.HasSuffix(name, "-err") && !slices.Contains(runtimeCalls, name) {
						total += per
					}
				}
				b.ReportMetric(total, "syscalls/send")
			}
		})
	}
}

// runtimeCalls are the system calls of Go's scheduler and memory, whose
// number follows the clock (sleeps, wake-ups, signals), not the work: the
// total per send leaves them out.
var runtimeCalls = []string{"futex", "nanosleep", "sched_yield", "epoll_pwait", "getpid", "tgkill", "rt_sigreturn", "mmap", "munmap", "madvise"}

// sendSyscalls runs one aipm serve under strace -f -c for n sends of a
// chat session (inbox as BenchmarkSendSyscalls says) and returns its
// system calls by name, and their failures as name-err.
func sendSyscalls(b *testing.B, strace, inbox string, n int) map[string]int {
	b.Helper()
	out := filepath.Join(b.TempDir(), "strace.txt")
	serveSends(b, inbox, n, strace, "-f", "-c", "-o", out, "--")
	f, err := os.Open(out)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	return straceCounts(b, f)
}

// serveSends runs one aipm serve (through the command wrap, if any) for n
// sends of a chat session, inbox as BenchmarkSendSyscalls says, and
// returns the state of the process that ran.
func serveSends(b *testing.B, inbox string, n int, wrap ...string) *os.ProcessState {
	b.Helper()
	p := newProject(b)
	recv := p.connect("")
	p.authenticate(recv, "reviewer", "chat")
	argv := append(wrap, aipmBin, "--dir", p.store.ProjectDir(), "serve")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), mcpserver.EnvCheckSchemas+"=0")
	cmd.Stderr = os.Stderr
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	token := p.authenticate(cs, "coder", "chat")
	for i := range n {
		if inbox == "busy" {
			p.send("reviewer", "coder", "answer "+strconv.Itoa(i))
		}
		r := call(b, cs, "send_message", map[string]any{"session_token": token, "target_agent_id": "reviewer", "content": "ping " + strconv.Itoa(i)})
		if r.isError {
			b.Fatal(r.text)
		}
	}
	if err := cs.Close(); err != nil { // waits for the process (strace writes its summary as it ends)
		b.Logf("close: %v", err)
	}
	if cmd.ProcessState == nil {
		b.Fatal("aipm serve did not end")
	}
	return cmd.ProcessState
}

// BenchmarkSendCPU reports the CPU time aipm serve spends per send_message
// (user and system, from the process's own accounting): the difference
// between a run of 1+N sends and a run of 1, divided by N
// (AIPM_BENCH_SENDS, default 200). On a shared machine it varies far less
// than a send's latency.
//
//	go test -run '^$' -bench SendCPU -benchtime 1x -count 5 ./mcpserver
func BenchmarkSendCPU(b *testing.B) {
	n := envInt("AIPM_BENCH_SENDS", 200)
	for _, inbox := range sendInboxes {
		b.Run("inbox="+inbox, func(b *testing.B) {
			for b.Loop() {
				one := serveSends(b, inbox, 1)
				many := serveSends(b, inbox, 1+n)
				per := func(f func(*os.ProcessState) time.Duration) float64 {
					return float64((f(many) - f(one)).Microseconds()) / float64(n)
				}
				b.ReportMetric(0, "ns/op")
				b.ReportMetric(per((*os.ProcessState).UserTime), "user-µs/send")
				b.ReportMetric(per((*os.ProcessState).SystemTime), "sys-µs/send")
			}
		})
	}
}

// straceCounts parses the table strace -c writes: "% time seconds
// usecs/call calls [errors] syscall" rows.
func straceCounts(b *testing.B, r io.Reader) map[string]int {
	counts := map[string]int{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 || len(f) > 6 || f[len(f)-1] == "total" {
			continue
		}
		calls, err := strconv.Atoi(f[3])
		if err != nil {
			continue // the header and the rules
		}
		name := f[len(f)-1]
		counts[name] += calls
		if len(f) == 6 {
			if errs, err := strconv.Atoi(f[4]); err == nil {
				counts[name+"-err"] += errs
			}
		}
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	if len(counts) == 0 {
		b.Fatal("strace wrote no summary")
	}
	return counts
}

// BenchmarkSendInProcess is send_message through the gate of a server in
// this process (in-memory transports), for profiles of what a send costs
// beside its writes:
//
//	go test -run '^$' -bench SendInProcess -cpuprofile cpu.out -memprofile mem.out ./mcpserver
func BenchmarkSendInProcess(b *testing.B) {
	b.Setenv(mcpserver.EnvCheckSchemas, "0")
	for _, inbox := range sendInboxes {
		b.Run("inbox="+inbox, func(b *testing.B) {
			p := newProject(b)
			recv := p.connect("")
			p.authenticate(recv, "reviewer", "chat")
			cs := connectInProcess(b, mcpserver.New(p.store, slog.New(slog.NewTextHandler(io.Discard, nil)), "bench").MCP())
			token := p.authenticate(cs, "coder", "chat")
			i := 0
			for b.Loop() {
				if inbox == "busy" {
					b.StopTimer()
					p.send("reviewer", "coder", "answer "+strconv.Itoa(i))
					b.StartTimer()
				}
				r := call(b, cs, "send_message", map[string]any{"session_token": token, "target_agent_id": "reviewer", "content": "ping " + strconv.Itoa(i)})
				if r.isError {
					b.Fatal(r.text)
				}
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(max(i, 1)), "µs/send")
		})
	}
}
