package fsstore

import (
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

// runHelper args: project dir, path or agent, count.
func runHelper(role string, args []string) error {
	store, err := Open(args[0])
	if err != nil {
		return err
	}
	n, _ := strconv.Atoi(args[2])
	ctx := context.Background()
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	name := fmt.Sprint(os.Getpid())
	switch role {
	case "append": // append n lines to the file args[1], acknowledging each
		for i := 0; i < n; i++ {
			id := NewID(PrefixMessage)
			if err := store.AppendJSONL(ctx, args[1], testLine{ID: id, Writer: name, Seq: i, Pad: strings.Repeat("x", i%300)}); err != nil {
				return err
			}
			fmt.Fprintln(out, id)
			out.Flush()
		}
	case "append-then-tear": // n whole lines, then half of one, then wait to be killed
		for i := 0; i < n; i++ {
			if err := store.AppendJSONL(ctx, args[1], testLine{ID: NewID(PrefixMessage), Writer: name, Seq: i}); err != nil {
				return err
			}
		}
		f, err := os.OpenFile(args[1], os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		f.Write([]byte(`{"id":"msg_torn","writer":"` + name + `","se`))
		f.Sync()
		fmt.Fprintln(out, "torn")
		out.Flush()
		time.Sleep(time.Hour)
	case "append-over-limit": // with a file size limit n bytes above the file's size, append one longer line
		fi, err := os.Stat(args[1])
		if err != nil {
			return err
		}
		lim := uint64(fi.Size()) + uint64(n)
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: lim, Max: lim}); err != nil {
			return err
		}
		err = store.AppendJSONL(ctx, args[1], testLine{ID: NewID(PrefixMessage), Writer: name, Pad: strings.Repeat("x", 3*n)})
		fmt.Fprintln(out, IsDiskFull(err), err)
	case "read": // read the agent args[1]'s chat cursor until the stop file exists and nothing is left
		stop := filepath.Join(args[0], "stop")
		for {
			_, stopErr := os.Stat(stop)
			res, err := store.ReadUnread(ctx, args[1], StreamChat, ReadOptions{Limit: 1 + os.Getpid()%7})
			if err != nil {
				return err
			}
			for _, r := range res.Records {
				fmt.Fprintln(out, idOf(r))
			}
			out.Flush()
			if stopErr == nil && len(res.Records) == 0 {
				return nil
			}
		}
	case "deliver": // as chat session n of agent args[1]: acknowledge, take a batch, print it; until the stop file exists and nothing is left
		stop := filepath.Join(args[0], "stop")
		ses := Session{ID: fmt.Sprintf("ses_%d", n), Agent: args[1], Purpose: PurposeChat}
		for {
			_, stopErr := os.Stat(stop)
			if err := store.Acknowledge(ctx, ses.Agent, ses.ID); err != nil { // the session's next call
				return err
			}
			msgs, _, err := store.Deliver(ctx, ses, 1+os.Getpid()%5)
			if err != nil {
				return err
			}
			time.Sleep(time.Duration(os.Getpid()%3) * time.Millisecond) // the way to the client takes time
			for _, m := range msgs {
				fmt.Fprintln(out, m.ID, m.Redelivered)
			}
			out.Flush()
			if stopErr == nil && len(msgs) == 0 {
				return nil
			}
		}
	case "send-full": // under a file-size limit of n bytes: a send that does not fit, then one that does
		signal.Ignore(syscall.SIGXFSZ) // write(2) then fails with EFBIG instead of killing us
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: uint64(n), Max: uint64(n)}); err != nil {
			return err
		}
		cfg, err := store.LoadConfig()
		if err != nil {
			return err
		}
		for _, content := range []string{strings.Repeat("big ", 900), "small"} {
			_, err := store.Send(ctx, cfg, OutgoingMessage{From: "alice", To: args[1], Content: content})
			var ce *CodeError
			switch {
			case err == nil:
				fmt.Fprintln(out, "sent")
			case errors.As(err, &ce):
				fmt.Fprintf(out, "%s: %s\n", ce.Code, ce.Msg)
			default:
				fmt.Fprintln(out, "error:", err)
			}
		}
	case "start-conversation": // args[1] is "from:to"; round i starts when the file go-i exists
		from, to, _ := strings.Cut(args[1], ":")
		cfg, err := store.LoadConfig()
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			for {
				if _, err := os.Stat(filepath.Join(args[0], fmt.Sprintf("go-%d", i))); err == nil {
					break
				}
				time.Sleep(50 * time.Microsecond)
			}
			c, _, err := store.Conversations().Start(ctx, cfg, NewConversation{From: from, To: to})
			var ce *CodeError
			switch {
			case err == nil:
				fmt.Fprintln(out, "started", c.ID)
			case errors.As(err, &ce):
				fmt.Fprintln(out, "refused", ce.Code)
			default:
				return err
			}
			out.Flush()
		}
	default:
		return fmt.Errorf("unknown role %q", role)
	}
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
