package storage

import (
	"aipm/internal/helperproc"
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"aipm/internal/lockedfile"

	"github.com/tidwall/gjson"
)

// The test binary is also the other processes of the multi-process tests
// (helperproc): the roles below, each printing one line per acknowledged
// operation on stdout.
func TestMain(m *testing.M) { helperproc.Main(m, runHelper) }

// testLine is a record the appending helpers write.
type testLine struct {
	ID     string `json:"id"`
	Writer string `json:"writer"`
	Seq    int    `json:"seq"`
	Pad    string `json:"pad,omitempty"`
}

// helperProc is what a helper process's role works with.
type helperProc struct {
	files *Files
	ctx   context.Context
	out   *bufio.Writer // flushed when the role returns
	name  string        // the writer's name in testLine: the pid
	dir   string        // args[0]: the project dir
	arg   string        // args[1]: a path or an agent
	n     int           // args[2]: a count
}

// helperRoles are the roles a helper process can play, by AIPM_HELPER.
var helperRoles = map[string]func(h *helperProc) error{
	"append":            helperAppend,
	"append-then-tear":  helperAppendThenTear,
	"append-over-limit": helperAppendOverLimit,
	"read":              helperRead,
	"open":              helperOpen,
}

// runHelper args: project dir, path or agent, count.
func runHelper(role string, args []string) error {
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	files, err := OpenFiles(args[0], true)
	if err != nil {
		return err
	}
	n, _ := strconv.Atoi(args[2])
	play, ok := helperRoles[role]
	if !ok {
		return fmt.Errorf("unknown role %q", role)
	}
	return play(&helperProc{
		files: files,
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
		id := NewID(PrefixMessage)
		if err := h.files.AppendJSONL(h.ctx, h.arg, testLine{ID: id, Writer: h.name, Seq: i, Pad: strings.Repeat("x", i%300)}); err != nil {
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
		if err := h.files.AppendJSONL(h.ctx, h.arg, testLine{ID: NewID(PrefixMessage), Writer: h.name, Seq: i}); err != nil {
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
	err = h.files.AppendJSONL(h.ctx, h.arg, testLine{ID: NewID(PrefixMessage), Writer: h.name, Pad: strings.Repeat("x", 3*h.n)})
	fmt.Fprintln(h.out, IsDiskFull(err), err)
	return nil
}

// helperRead reads the agent arg's chat cursor until the stop file exists
// and nothing is left.
func helperRead(h *helperProc) error {
	stop := filepath.Join(h.dir, "stop")
	for {
		_, stopErr := os.Stat(stop)
		res, err := h.files.ReadUnread(h.ctx, h.arg, StreamChat, ReadOptions{ReadOptions: lockedfile.ReadOptions{Limit: 1 + os.Getpid()%7}})
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

// helperOpen opened the project (runHelper did) and prints "reset" if
// that moved a clone's cursors, then "opened".
func helperOpen(h *helperProc) error {
	if h.files.movedClone {
		fmt.Fprintln(h.out, "reset")
	}
	fmt.Fprintln(h.out, "opened")
	return nil
}

// idOf is the id of record r.
func idOf(r Record) string { return gjson.GetBytes(r.Data, "id").String() }

// newTestFiles makes a project with an empty .ai-pm/ as aipm init leaves
// it (a config that asks for fsync, agents/, this checkout's marker) and
// opens its storage.
func newTestFiles(t *testing.T) *Files {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, DirName)
	config := "[project]\nname = \"test\"\n\n[defaults]\ndurability = \"" + DurableFsync + "\"\n"
	if err := os.MkdirAll(filepath.Join(root, "agents"), ModeDir); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(filepath.Join(root, "config.toml"), []byte(config), ModeFile, false); err != nil {
		t.Fatal(err)
	}
	if err := WriteInitMarker(root); err != nil {
		t.Fatal(err)
	}
	f, err := OpenFiles(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
