package mcpserver_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
	"aipm/internal/failpoint"
	"aipm/mcpserver"
)

// stdioServe is an aipm serve over stdio and its SDK client, with the
// process at hand to kill.
type stdioServe struct {
	cs  *mcp.ClientSession
	cmd *exec.Cmd
}

// serveStdio starts aipm serve for the project with extra environment,
// its stderr to stderr, and connects an SDK client.
func (p *project) serveStdio(env []string, stderr *lineWatch) stdioServe {
	p.t.Helper()
	cmd := exec.Command(aipmBin, "--dir", p.store.ProjectDir(), "serve")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	if stderr != nil {
		cmd.Stderr = stderr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "aipm-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		p.t.Fatalf("connect: %v", err)
	}
	p.t.Cleanup(func() { cs.Close() })
	return stdioServe{cs, cmd}
}

// kill SIGKILLs the server; closing the client reaps it.
func (s stdioServe) kill() {
	s.cmd.Process.Kill()
	s.cs.Close()
}

// Over stdio with overlapping calls of one session, aipm serve killed
// between handing a batch and writing the answer that carries it (the
// failpoint holds that answer): the call that overlapped it read nothing,
// and the next session gets the batch again, marked redelivered. A call
// that would settle what the session holds waits for that answer
// instead; any other call runs.
func TestStdioOverlapKilledBeforeAnswer(t *testing.T) {
	for _, overlap := range []string{"list_tasks", "send_message", "get_next_action", "get_pending_messages"} {
		t.Run(overlap, func(t *testing.T) {
			p := newProject(t)
			p.send("lead", "reviewer", "one")
			p.send("lead", "reviewer", "two")
			held := &lineWatch{want: "failpoint " + mcpserver.FailpointHandedUnwritten + ": holding", seen: make(chan struct{})}
			srv := p.serveStdio([]string{failpoint.Env + "=" + mcpserver.FailpointHandedUnwritten, "AIPM_LOG=debug"}, held)
			tok := p.authenticate(srv.cs, "reviewer", fsstore.PurposeChat)
			go tryCall(srv.cs, "get_pending_messages", map[string]any{"session_token": tok}) // its answer never comes
			select {
			case <-held.seen:
			case <-time.After(20 * time.Second):
				t.Fatal("the answer that hands the batch never reached the failpoint")
			}

			args := map[string]any{"session_token": tok}
			switch overlap {
			case "send_message":
				args["target_agent_id"], args["content"] = "coder", "meanwhile"
			case "get_next_action":
				args["wait_seconds"] = 1
			}
			answered := make(chan result, 1)
			go func() {
				r, err := tryCall(srv.cs, overlap, args)
				if err == nil {
					answered <- r
				}
			}()
			switch overlap {
			case "list_tasks", "send_message":
				// It runs while the batch's answer is held.
				select {
				case r := <-answered:
					if r.isError {
						t.Fatalf("%s beside the held answer: %s", overlap, r.text)
					}
				case <-time.After(20 * time.Second):
					t.Fatalf("%s beside the held answer never answered", overlap)
				}
			default:
				// It would settle the batch: it waits for the answer.
				waitUntil(t, 20*time.Second, overlap+" never waited for the held answer", func() bool {
					return strings.Contains(held.String(), "waiting for it")
				})
			}
			srv.kill()

			next := p.connect("")
			ntok := p.authenticate(next, "reviewer", fsstore.PurposeChat)
			if got := msgs(call(t, next, "get_pending_messages", map[string]any{"session_token": ntok})); strings.Join(got, " ") != "*one *two" {
				t.Fatalf("after the kill, with %s beside the held answer: %v, want *one *two", overlap, got)
			}
		})
	}
}

// String is what was written so far.
func (w *lineWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

// Over stdio, aipm serve SIGKILLed at random instants while a session's
// calls overlap (two reads, a send, and three list_tasks each up to 3 ms
// later): every
// message sent reaches a client, and a message that reaches one more than
// once is marked redelivered each time after the first. Each server lives
// a random number of rounds, and is killed into its last: at a random
// moment, or as soon as a list_tasks beside the reads is answered,
// until every message reached a client (then one more reads to the end).
// 300 messages, 10,000 with AIPM_LONG=1.
func TestStdioKilledAtRandomLosesNothing(t *testing.T) {
	n := 300
	if os.Getenv("AIPM_LONG") != "" {
		n = 10000
	}
	p := newProject(t)
	sent, sending := sendInBackground(t, p, n)
	got := &deliveries{plain: map[string]int{}, marked: map[string]int{}}
	kills := 0
	for done, after := false, 0; !done; {
		select {
		case <-sending:
			// Once every message reached a client (or after enough more
			// servers, if some never do), one more server, read to the end
			// and not killed.
			after++
			done = got.received() >= n || after > 20+n/20
		default:
		}
		if serveOverlappingReads(p, got, done) {
			kills++
		}
	}
	lost, twice := got.lostAndTwice(sent)
	t.Logf("%d messages, %d servers killed: %d never returned, %d returned twice unmarked, %d repeats marked", n, kills, lost, twice, total(got.marked))
	if lost > 0 || twice > 0 {
		t.Fatalf("%d of %d messages never returned to a client, %d returned twice without the mark", lost, n, twice)
	}
}

// sendInBackground sends n messages of 2,000 bytes from lead to reviewer
// through the store, beside the test; it returns the ids sent, to be read
// only once the channel it returns is closed, when the sending is over.
func sendInBackground(t *testing.T, p *project, n int) (map[string]bool, <-chan struct{}) {
	sent := map[string]bool{}
	sending := make(chan struct{})
	go func() {
		defer close(sending)
		for i := range n {
			m, err := p.store.Send(context.Background(), p.cfg, fsstore.OutgoingMessage{From: "lead", To: "reviewer", Content: fmt.Sprintf("m%d %s", i, strings.Repeat("x", 2000))})
			if err != nil {
				t.Error(err)
				return
			}
			sent[m.ID] = true // read only after sending is closed
		}
	}()
	return sent, sending
}

// deliveries counts, by message id, the times a message reached a client
// unmarked (plain) and marked redelivered.
type deliveries struct {
	mu            sync.Mutex
	plain, marked map[string]int
}

// record counts the messages of a get_pending_messages answer (none when
// the call failed) and returns how many it held.
func (d *deliveries) record(r result, err error) int {
	if err != nil || r.isError {
		return 0
	}
	list, _ := r.data["pending_messages"].([]any)
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range list {
		m := m.(map[string]any)
		if m["redelivered"] == true {
			d.marked[m["id"].(string)]++
		} else {
			d.plain[m["id"].(string)]++
		}
	}
	return len(list)
}

// received is how many messages reached a client: those marked
// redelivered at least once, and those only ever unmarked.
func (d *deliveries) received() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	seen := 0
	for id := range d.plain {
		if d.marked[id] == 0 {
			seen++
		}
	}
	return seen + len(d.marked)
}

// lostAndTwice counts the messages sent that never reached a client, and
// those that reached one more than once unmarked.
func (d *deliveries) lostAndTwice(sent map[string]bool) (lost, twice int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for id := range sent {
		if d.plain[id]+d.marked[id] == 0 {
			lost++
		}
		if d.plain[id] > 1 {
			twice++
		}
	}
	return lost, twice
}

// serveOverlappingReads starts an aipm serve and plays rounds of
// overlapping calls of one reviewer session on it. Unless last, it lives
// a random number of rounds (one to four) and is killed into its last;
// the last server is not killed and plays rounds until one reads
// nothing. It says whether it killed the server.
func serveOverlappingReads(p *project, got *deliveries, last bool) (killed bool) {
	srv := p.serveStdio(nil, nil)
	tok := p.authenticate(srv.cs, "reviewer", fsstore.PurposeChat)
	rounds := rand.IntN(4)
	for round := 0; last || round <= rounds; round++ {
		kill := !last && round == rounds
		read := overlappingRound(srv, tok, got, kill)
		killed = killed || kill
		if last && read == 0 {
			break
		}
	}
	return killed
}

// overlappingRound plays one round on srv for the session tok: two reads
// of at most 10 messages (recorded in got), three list_tasks each up to
// 3 ms later, and a send. With kill, the server is SIGKILLed into the
// round: at a random instant, or as soon as a list_tasks has its answer
// (a read's answer may be on its way). It returns how many messages the
// reads returned.
func overlappingRound(srv stdioServe, tok string, got *deliveries, kill bool) int {
	read := map[string]any{"session_token": tok, "limit": 10}
	var wg sync.WaitGroup
	counts := make([]int, 2)
	for i := range counts {
		wg.Go(func() { counts[i] = got.record(tryCall(srv.cs, "get_pending_messages", read)) })
	}
	answered := make(chan struct{}, 3)
	for range 3 {
		wg.Go(func() {
			time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond) // into a read, or not
			tryCall(srv.cs, "list_tasks", map[string]any{"session_token": tok})
			answered <- struct{}{}
		})
	}
	wg.Go(func() {
		tryCall(srv.cs, "send_message", map[string]any{"session_token": tok, "target_agent_id": "coder", "content": "ok"})
	})
	if kill {
		if rand.IntN(2) == 0 {
			time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
		} else {
			<-answered
		}
		srv.kill()
	}
	wg.Wait()
	return counts[0] + counts[1]
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
