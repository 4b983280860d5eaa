package lockedfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A HeldRecord reads and rewrites its record as ReadRecord and SwapRecord
// do, whatever another process does to the file between its calls:
// rewrites it in place, removes it, replaces it.
func TestHeldRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "told")
	r := NewHeldRecord(path, 0o600)
	defer r.Close()
	ctx := context.Background()
	set := func(content string) func([]byte) ([]byte, error) {
		return func([]byte) ([]byte, error) { return []byte(content), nil }
	}
	want := func(step, content string) {
		t.Helper()
		data, err := r.Read()
		if err != nil || string(data) != content {
			t.Fatalf("%s: read %q (%v), want %q", step, data, err, content)
		}
	}
	want("no file", "")
	if err := r.Swap(ctx, false, set("x")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("swap without create on no file: %v", err)
	}
	if err := r.Swap(ctx, true, set("first, longer")); err != nil {
		t.Fatal(err)
	}
	want("created", "first, longer")
	if err := r.Swap(ctx, false, func(old []byte) ([]byte, error) {
		if string(old) != "first, longer" {
			t.Errorf("swap saw %q", old)
		}
		return []byte("second"), nil
	}); err != nil {
		t.Fatal(err)
	}
	want("shorter", "second")
	if data, _ := ReadRecord(path); string(data) != "second" {
		t.Fatalf("ReadRecord after a swap: %q", data)
	}
	refused := errors.New("refused")
	if err := r.Swap(ctx, false, func([]byte) ([]byte, error) { return nil, refused }); !errors.Is(err, refused) {
		t.Fatalf("an edit's error: %v", err)
	}
	want("refused", "second")

	if err := SwapRecord(ctx, path, 0o600, false, set("by another process")); err != nil {
		t.Fatal(err)
	}
	want("rewritten in place elsewhere", "by another process")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	want("removed", "")
	if err := r.Swap(ctx, false, set("x")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("swap without create on a removed file: %v", err)
	}
	if err := r.Swap(ctx, true, set("again")); err != nil {
		t.Fatal(err)
	}
	want("created again", "again")
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte("replaced"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	want("replaced by rename", "replaced")
	if err := r.Swap(ctx, false, set("swapped")); err != nil {
		t.Fatal(err)
	}
	if data, _ := ReadRecord(path); string(data) != "swapped" {
		t.Fatalf("the swap after a replacement wrote into another file: the path holds %q", data)
	}
}

// A HeldRecord waits for a lock another process holds, as the plain
// record does.
func TestHeldRecordWaitsForTheLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "told")
	r := NewHeldRecord(path, 0o600)
	defer r.Close()
	if err := r.Swap(context.Background(), true, func([]byte) ([]byte, error) { return []byte("a"), nil }); err != nil {
		t.Fatal(err)
	}
	holder, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := syscall.Flock(int(holder.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() {
		data, _ := r.Read()
		done <- string(data)
	}()
	select {
	case data := <-done:
		t.Fatalf("read %q while another process held the lock", data)
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := holder.WriteAt([]byte("b"), 0); err != nil {
		t.Fatal(err)
	}
	syscall.Flock(int(holder.Fd()), syscall.LOCK_UN)
	if data := <-done; data != "b" {
		t.Fatalf("read %q once the lock was released, want b", data)
	}
}

// HeldRecords hands one HeldRecord per path and, past its bound, starts
// over without breaking a HeldRecord still held: that one opens its file
// again.
func TestHeldRecordsBounded(t *testing.T) {
	dir := t.TempDir()
	var c HeldRecords
	first := c.Get(filepath.Join(dir, "r0"), 0o600)
	if c.Get(filepath.Join(dir, "r0"), 0o600) != first {
		t.Fatal("a second Get of one path made another HeldRecord")
	}
	write := func(r *HeldRecord, s string) {
		t.Helper()
		if err := r.Swap(context.Background(), true, func([]byte) ([]byte, error) { return []byte(s), nil }); err != nil {
			t.Fatal(err)
		}
	}
	write(first, "a")
	for i := 1; i <= heldRecordsMax; i++ {
		write(c.Get(filepath.Join(dir, "r"+string(rune('a'+i%26))+string(rune('0'+i/26))), 0o600), "x")
	}
	write(first, "b") // closed by the start over, or not yet: it works
	if data, err := first.Read(); err != nil || string(data) != "b" {
		t.Fatalf("read %q (%v)", data, err)
	}
	if c.Get(filepath.Join(dir, "r0"), 0o600) == first {
		t.Error("the bound did not start over")
	}
}
