package lockedfile

import (
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
)

// The test binary re-executes itself with LOCKEDFILE_HELPER set to run a
// role in a process of its own (here: under a file-size limit).
func TestMain(m *testing.M) {
	if role := os.Getenv("LOCKEDFILE_HELPER"); role != "" {
		if err := runHelper(role, os.Args[len(os.Args)-2:]); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runHelper "full-disk" args: path, limit. Under RLIMIT_FSIZE = limit (with
// SIGXFSZ ignored, so write(2) fails with EFBIG instead of killing us), it
// appends a line that does not fit, then one that does, and prints what
// each append returned.
func runHelper(role string, args []string) error {
	if role != "full-disk" {
		return fmt.Errorf("unknown role %q", role)
	}
	limit, _ := strconv.ParseUint(args[1], 10, 64)
	signal.Ignore(syscall.SIGXFSZ)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		return err
	}
	ctx := context.Background()
	big := `{"id":"big","pad":"` + strings.Repeat("x", 4096) + `"}`
	err := Append(ctx, args[0], []byte(big), AppendOptions{Durable: true, Perm: 0o644})
	fmt.Printf("big: full=%v err=%v\n", errors.Is(err, ErrDiskFull), err)
	err = Append(ctx, args[0], []byte(`{"id":"small"}`), AppendOptions{Durable: true, Perm: 0o644})
	fmt.Printf("small: err=%v\n", err)
	return nil
}

// A full disk (a file-size limit) in the middle of a line: the append fails
// with ErrDiskFull, the part of the line that landed is truncated back, and
// the next append that fits succeeds.
func TestAppendFullDiskLeavesNoFragment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	appendIDs(t, path, "m1", "m2")
	before, _ := os.ReadFile(path)
	cmd := exec.Command(os.Args[0], "-test.run=^$", path, strconv.Itoa(len(before)+1000))
	cmd.Env = append(os.Environ(), "LOCKEDFILE_HELPER=full-disk")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "big: full=true") || !strings.Contains(string(out), "small: err=<nil>") {
		t.Fatalf("helper said:\n%s", out)
	}
	after, _ := os.ReadFile(path)
	if want := string(before) + "{\"id\":\"small\"}\n"; string(after) != want {
		t.Fatalf("file after the full disk:\n%q\nwant\n%q", after, want)
	}
	recs, bad, tail, err := ReadAll(path)
	if err != nil || len(bad) > 0 || tail != 0 || len(recs) != 3 {
		t.Fatalf("ReadAll: %d records, bad %v, tail %d, err %v", len(recs), bad, tail, err)
	}
}

// A new file's directory entry is made durable: Append reports a created
// file (it syncs the directory), and only the first time.
func TestAppendCreatesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.jsonl")
	for i := 0; i < 2; i++ {
		w, created, err := writeLocked(context.Background(), path, []byte("{\"id\":\"x\"}\n"), AppendOptions{Perm: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
		if created != (i == 0) {
			t.Fatalf("append %d: created=%v", i, created)
		}
	}
}

// Unless makes an append idempotent.
func TestAppendUnless(t *testing.T) {
	path := filepath.Join(t.TempDir(), "n.jsonl")
	opt := AppendOptions{Perm: 0o644, Unless: []byte(`"key":"k1"`)}
	for i := 0; i < 3; i++ {
		if err := Append(context.Background(), path, []byte(`{"id":"n`+strconv.Itoa(i)+`","key":"k1"}`), opt); err != nil {
			t.Fatal(err)
		}
	}
	if recs, _, _, _ := ReadAll(path); len(recs) != 1 {
		t.Fatalf("%d lines with one key, want 1", len(recs))
	}
}
