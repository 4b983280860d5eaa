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

// TestSwapRecordGivesUpCleanly: a SwapRecord that stops waiting for a held
// record (its context ended) never releases, later, a lock its descriptor
// number came to name: the file opened next, locked, stays locked once the
// record's holder lets go and the abandoned flock(2) is answered.
func TestSwapRecordGivesUpCleanly(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(dir, "told")
	if err := SwapRecord(context.Background(), record, 0o600, true, func([]byte) ([]byte, error) { return []byte("a"), nil }); err != nil {
		t.Fatal(err)
	}
	holder, err := os.OpenFile(record, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(holder.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = SwapRecord(ctx, record, 0o600, false, func([]byte) ([]byte, error) { return []byte("b"), nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SwapRecord on a held record: %v, want the deadline", err)
	}
	other := filepath.Join(dir, "other")
	f, err := os.OpenFile(other, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	holder.Close() // the abandoned flock(2) is answered now
	time.Sleep(50 * time.Millisecond)
	g, err := os.Open(other)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := syscall.Flock(int(g.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		t.Fatal("the other file's lock was released by the abandoned SwapRecord")
	}
	if data, _ := ReadRecord(record); string(data) != "a" {
		t.Errorf("the abandoned SwapRecord wrote %q", data)
	}
	if err := SwapRecord(context.Background(), filepath.Join(dir, "none"), 0o600, false, func([]byte) ([]byte, error) { return nil, nil }); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("SwapRecord without create on a missing file: %v", err)
	}
}
