package fsstore

import (
	"aipm/fsstore/internal/storage"
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary re-executes itself as a helper process when AIPM_HELPER
// names a role; the roles below are the other processes of the multi-process
// tests. Each prints one line per acknowledged operation on stdout.
func TestMain(m *testing.M) {
	if role := os.Getenv("AIPM_HELPER"); role != "" {
		if err := runHelper(role, os.Args[len(os.Args)-3:]); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type testLine struct {
	ID     string `json:"id"`
	Writer string `json:"writer"`
	Seq    int    `json:"seq"`
	Pad    string `json:"pad,omitempty"`
}

// helperProc is what a helper process's role works with.
type helperProc struct {
	store *Store
	ctx   context.Context
	out   *bufio.Writer // flushed when the role returns
	name  string        // the writer's name in testLine: the pid
	dir   string        // args[0]: the project dir
	arg   string        // args[1]: a path or an agent
	n     int           // args[2]: a count
}

// helperRoles are the roles a helper process can play, by AIPM_HELPER.
var helperRoles = map[string]func(h *helperProc) error{
	"append":             helperAppend,
	"append-then-tear":   helperAppendThenTear,
	"append-over-limit":  helperAppendOverLimit,
	"read":               helperRead,
	"deliver":            helperDeliver,
	"send-full":          helperSendFull,
	"start-conversation": helperStartConversation,
	"open":               helperOpen,
}

// runHelper args: project dir, path or agent, count.
func runHelper(role string, args []string) error {
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	if role == "open" {
		storage.TestHookCloneReset = func() { fmt.Fprintln(out, "reset") }
	}
	store, err := Open(args[0])
	if err != nil {
		return err
	}
	n, _ := strconv.Atoi(args[2])
	play, ok := helperRoles[role]
	if !ok {
		return fmt.Errorf("unknown role %q", role)
	}
	return play(&helperProc{
		store: store,
		ctx:   context.Background(),
		out:   out,
		name:  fmt.Sprint(os.Getpid()),
		dir:   args[0],
		arg:   args[1],
		n:     n,
	})
}

// helperAppend appends n lines to the file arg, acknowledging each.
func helperAppend(h *helperProc) error {
	for i := 0; i < h.n; i++ {
		id := storage.NewID(storage.PrefixMessage)
		if err := h.store.files.AppendJSONL(h.ctx, h.arg, testLine{ID: id, Writer: h.name, Seq: i, Pad: strings.Repeat("x", i%300)}); err != nil {
			return err
		}
		fmt.Fprintln(h.out, id)
		h.out.Flush()
	}
	return nil
}

// helperAppendThenTear appends n whole lines, then half of one, then waits
// to be killed.
func helperAppendThenTear(h *helperProc) error {
	for i := 0; i < h.n; i++ {
		if err := h.store.files.AppendJSONL(h.ctx, h.arg, testLine{ID: storage.NewID(storage.PrefixMessage), Writer: h.name, Seq: i}); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(h.arg, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	f.Write([]byte(`{"id":"msg_torn","writer":"` + h.name + `","se`))
	f.Sync()
	fmt.Fprintln(h.out, "torn")
	h.out.Flush()
	time.Sleep(time.Hour)
	return nil
}

// helperAppendOverLimit appends, with a file size limit n bytes above the
// file's size, one longer line.
func helperAppendOverLimit(h *helperProc) error {
	fi, err := os.Stat(h.arg)
	if err != nil {
		return err
	}
	lim := uint64(fi.Size()) + uint64(h.n)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: lim, Max: lim}); err != nil {
		return err
	}
	err = h.store.files.AppendJSONL(h.ctx, h.arg, testLine{ID: storage.NewID(storage.PrefixMessage), Writer: h.name, Pad: strings.Repeat("x", 3*h.n)})
	fmt.Fprintln(h.out, storage.IsDiskFull(err), err)
	return nil
}

// helperRead reads the agent arg's chat cursor until the stop file exists
// and nothing is left.
func helperRead(h *helperProc) error {
	stop := filepath.Join(h.dir, "stop")
	for {
		_, stopErr := os.Stat(stop)
		res, err := h.store.files.ReadUnread(h.ctx, h.arg, storage.StreamChat, storage.ReadOptions{Limit: 1 + os.Getpid()%7})
		if err != nil {
			return err
		}
		for _, r := range res.Records {
			fmt.Fprintln(h.out, idOf(r))
		}
		h.out.Flush()
		if stopErr == nil && len(res.Records) == 0 {
			return nil
		}
	}
}

// helperDeliver, as chat session n of agent arg: acknowledges, takes a
// batch, prints it; until the stop file exists and nothing is left.
func helperDeliver(h *helperProc) error {
	stop := filepath.Join(h.dir, "stop")
	ses := Session{ID: fmt.Sprintf("ses_%d", h.n), Agent: h.arg, Purpose: storage.PurposeChat}
	for {
		_, stopErr := os.Stat(stop)
		if err := h.store.files.Acknowledge(h.ctx, ses.Agent, ses.ID); err != nil { // the session's next call
			return err
		}
		msgs, _, err := h.store.Deliver(h.ctx, ses, 1+os.Getpid()%5)
		if err != nil {
			return err
		}
		time.Sleep(time.Duration(os.Getpid()%3) * time.Millisecond) // the way to the client takes time
		for _, m := range msgs {
			fmt.Fprintln(h.out, m.ID, m.Redelivered)
		}
		h.out.Flush()
		if stopErr == nil && len(msgs) == 0 {
			return nil
		}
	}
}

// helperSendFull, under a file-size limit of n bytes, sends to arg a
// message that does not fit, then one that does.
func helperSendFull(h *helperProc) error {
	signal.Ignore(syscall.SIGXFSZ) // write(2) then fails with EFBIG instead of killing us
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: uint64(h.n), Max: uint64(h.n)}); err != nil {
		return err
	}
	cfg, err := h.store.files.LoadConfig()
	if err != nil {
		return err
	}
	for _, content := range []string{strings.Repeat("big ", 900), "small"} {
		_, err := h.store.Send(h.ctx, cfg, OutgoingMessage{From: "alice", To: h.arg, Content: content})
		var ce *storage.CodeError
		switch {
		case err == nil:
			fmt.Fprintln(h.out, "sent")
		case errors.As(err, &ce):
			fmt.Fprintf(h.out, "%s: %s\n", ce.Code, ce.Msg)
		default:
			fmt.Fprintln(h.out, "error:", err)
		}
	}
	return nil
}

// helperStartConversation starts n conversations: arg is "from:to"; round
// i starts when the file go-i exists.
func helperStartConversation(h *helperProc) error {
	from, to, _ := strings.Cut(h.arg, ":")
	cfg, err := h.store.files.LoadConfig()
	if err != nil {
		return err
	}
	for i := 0; i < h.n; i++ {
		for {
			if _, err := os.Stat(filepath.Join(h.dir, fmt.Sprintf("go-%d", i))); err == nil {
				break
			}
			time.Sleep(50 * time.Microsecond)
		}
		c, _, err := h.store.Conversations().Start(h.ctx, cfg, NewConversation{From: from, To: to})
		var ce *storage.CodeError
		switch {
		case err == nil:
			fmt.Fprintln(h.out, "started", c.ID)
		case errors.As(err, &ce):
			fmt.Fprintln(h.out, "refused", ce.Code)
		default:
			return err
		}
		h.out.Flush()
	}
	return nil
}

// helperOpen opened the project (runHelper did, printing "reset" if it
// moved a clone's cursors) and prints "opened".
func helperOpen(h *helperProc) error {
	fmt.Fprintln(h.out, "opened")
	return nil
}

// helper starts the test binary as a helper process.
func helper(t *testing.T, role string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$"}, args...)...)
	cmd.Env = append(os.Environ(), "AIPM_HELPER="+role)
	cmd.Stderr = os.Stderr
	return cmd
}

// newTestStore makes a project with an empty .ai-pm/.
func newTestStore(t *testing.T) *Store {
	t.Helper()
	s, err := Init(t.TempDir(), "test")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// leadAndCoder is a test store with a human, lead, and an AI agent, coder,
// and its config.
func leadAndCoder(t *testing.T) (*Store, *storage.Config) {
	t.Helper()
	s := newTestStore(t)
	for _, a := range []NewAgent{{ID: "lead", Type: storage.AgentHuman}, {ID: "coder", Type: storage.AgentAI}} {
		if _, err := s.AddAgent(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := s.files.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	return s, cfg
}
