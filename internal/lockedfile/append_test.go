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
	"sync"
	"syscall"
	"testing"
	"time"
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
	err := appendOnce(ctx, args[0], []byte(big), AppendOptions{Durable: true})
	fmt.Printf("big: full=%v err=%v\n", errors.Is(err, ErrDiskFull), err)
	err = appendOnce(ctx, args[0], []byte(`{"id":"small"}`), AppendOptions{Durable: true})
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

// A new file's directory entry is made durable: the first durable append
// syncs the directory, later ones (through the same Appender or another)
// do not.
func TestAppendCreatesFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "new.jsonl")
	var synced []string
	syncDir = func(d string) error { synced = append(synced, d); return nil }
	t.Cleanup(func() { syncDir = SyncDir })
	a := NewAppender(path, 0o640)
	for i := 0; i < 2; i++ {
		if err := appendVia(a, `{"id":"x"}`); err != nil {
			t.Fatal(err)
		}
	}
	a.Close()
	if err := appendOnce(context.Background(), path, []byte(`{"id":"y"}`), AppendOptions{Durable: true}); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 1 || synced[0] != dir {
		t.Fatalf("directory syncs: %q, want one of %s", synced, dir)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("created file: %v, %v", fi, err)
	}
}

func appendVia(a *Appender, line string) error {
	flush, err := a.Write(context.Background(), []byte(line), AppendOptions{Durable: true})
	if err != nil {
		return err
	}
	return flush()
}

// Unless makes an append idempotent.
func TestAppendUnless(t *testing.T) {
	path := filepath.Join(t.TempDir(), "n.jsonl")
	opt := AppendOptions{Unless: []byte(`"key":"k1"`)}
	for i := 0; i < 3; i++ {
		if err := appendOnce(context.Background(), path, []byte(`{"id":"n`+strconv.Itoa(i)+`","key":"k1"}`), opt); err != nil {
			t.Fatal(err)
		}
	}
	if recs, _, _, _ := ReadAll(path); len(recs) != 1 {
		t.Fatalf("%d lines with one key, want 1", len(recs))
	}
}

// An Appender keeps its descriptor between appends, but never writes into
// a file the path no longer names: after a rename-replace (an editor's
// save) or a removal, the next line lands in the file the path names, and
// a fragment another writer left is ended before our line.
func TestAppenderFollowsThePath(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, path string)
		want   string // the file's content after the change and one more append
	}{
		{"untouched", func(*testing.T, string) {}, "{\"n\":1}\n{\"n\":2}\n"},
		{"renamed over", func(t *testing.T, path string) {
			tmp := path + ".tmp"
			writeFile(t, tmp, "{\"n\":1}\n{\"edited\":true}\n")
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}, "{\"n\":1}\n{\"edited\":true}\n{\"n\":2}\n"},
		{"removed", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, "{\"n\":2}\n"},
		{"fragment appended by another writer", func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(`{"torn":`)
			f.Close()
		}, "{\"n\":1}\n{\"torn\":\n{\"n\":2}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "chat.jsonl")
			a := NewAppender(path, 0o644)
			defer a.Close()
			if err := appendVia(a, `{"n":1}`); err != nil {
				t.Fatal(err)
			}
			tt.change(t, path)
			if err := appendVia(a, `{"n":2}`); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(path); string(got) != tt.want {
				t.Fatalf("file:\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// A lock request that ctx abandons leaves no lock behind and no descriptor
// the Appender could mistake for locked: the next append, once the holder
// lets go, succeeds, and the file can be locked again by anyone.
func TestAppenderAbandonedLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chat.jsonl")
	a := NewAppender(path, 0o644)
	defer a.Close()
	if err := appendVia(a, `{"n":1}`); err != nil {
		t.Fatal(err)
	}
	unlock, err := Lock(context.Background(), path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := a.Write(ctx, []byte(`{"n":"lost"}`), AppendOptions{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("write under a held lock: %v, want the deadline", err)
	}
	unlock()
	if err := appendVia(a, `{"n":2}`); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	unlock, err = Lock(ctx2, path, 0o644)
	if err != nil {
		t.Fatalf("the file stayed locked after the abandoned request: %v", err)
	}
	unlock()
	if got, _ := os.ReadFile(path); string(got) != "{\"n\":1}\n{\"n\":2}\n" {
		t.Fatalf("file: %q", got)
	}
}

// Goroutines sharing one Appender and other Appenders on the same file
// (as other processes would) interleave whole lines only.
func TestAppenderConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chat.jsonl")
	shared := NewAppender(path, 0o644)
	defer shared.Close()
	const writers, each = 6, 50
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		a := shared
		if w%2 == 1 {
			a = NewAppender(path, 0o644)
			defer a.Close()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := appendVia(a, fmt.Sprintf(`{"w":%d,"i":%d,"pad":"%s"}`, w, i, strings.Repeat("x", 100*w))); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	recs, bad, tail, err := ReadAll(path)
	if err != nil || len(bad) > 0 || tail != 0 || len(recs) != writers*each {
		t.Fatalf("ReadAll: %d records (want %d), bad %v, tail %d, err %v", len(recs), writers*each, bad, tail, err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// appendOnce appends one line through an Appender of its own, as a process
// that appends once would, and flushes it.
func appendOnce(ctx context.Context, path string, line []byte, opt AppendOptions) error {
	a := NewAppender(path, 0o644)
	defer a.Close()
	flush, err := a.Write(ctx, line, opt)
	if err != nil {
		return err
	}
	return flush()
}

// Appenders hands one Appender per path and, past its bound, starts over
// without breaking an Appender still held: that one reopens its file.
func TestAppendersBounded(t *testing.T) {
	dir := t.TempDir()
	var c Appenders
	first := filepath.Join(dir, "first.jsonl")
	held := c.Get(first, 0o644)
	if c.Get(first, 0o644) != held {
		t.Fatal("a second Get of one path gave a second Appender")
	}
	if err := appendVia(held, `{"n":1}`); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < appendersMax; i++ {
		c.Get(filepath.Join(dir, strconv.Itoa(i)+".jsonl"), 0o644)
	}
	if c.Get(first, 0o644) == held {
		t.Fatal("past the bound, the cache still holds the first Appender")
	}
	if n := len(c.m); n > appendersMax {
		t.Fatalf("cache holds %d appenders, bound %d", n, appendersMax)
	}
	time.Sleep(10 * time.Millisecond) // let the retired Appender's Close run
	if err := appendVia(held, `{"n":2}`); err != nil {
		t.Fatalf("append through a retired Appender: %v", err)
	}
	if recs, _, _, _ := ReadAll(first); len(recs) != 2 {
		t.Fatalf("%d lines, want 2", len(recs))
	}
}
