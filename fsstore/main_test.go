package fsstore

import (
	"aipm/fsstore/internal/storage"
	"aipm/internal/helperproc"
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// The test binary is also the other processes of the multi-process tests
// (helperproc): the roles below, each printing one line per acknowledged
// operation on stdout.
func TestMain(m *testing.M) { helperproc.Main(m, runHelper) }

// helperProc is what a helper process's role works with.
type helperProc struct {
	store *Store
	ctx   context.Context
	out   *bufio.Writer // flushed when the role returns
	name  string        // the helper's name: its pid
	dir   string        // args[0]: the project dir
	arg   string        // args[1]: a path or an agent
	n     int           // args[2]: a count
}

// helperRoles are the roles a helper process can play, by AIPM_HELPER.
var helperRoles = map[string]func(h *helperProc) error{
	"deliver":            helperDeliver,
	"send-full":          helperSendFull,
	"start-conversation": helperStartConversation,
}

// runHelper args: project dir, path or agent, count.
func runHelper(role string, args []string) error {
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
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

// idOf is the id of record r.
func idOf(r storage.Record) string { return gjson.GetBytes(r.Data, "id").String() }

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
