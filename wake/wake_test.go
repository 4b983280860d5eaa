package wake

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWakeOnChange(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(dir string) error
	}{
		{"append", func(dir string) error {
			f, err := os.OpenFile(filepath.Join(dir, "chat.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.Write([]byte("{}\n"))
			return err
		}},
		{"editor rename-replace", func(dir string) error {
			tmp := filepath.Join(dir, "chat.jsonl~")
			if err := os.WriteFile(tmp, []byte("{}\n"), 0o644); err != nil {
				return err
			}
			return os.Rename(tmp, filepath.Join(dir, "chat.jsonl"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w := New()
			sub, err := w.Subscribe(filepath.Join(dir, "chat.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			if err := tc.change(dir); err != nil {
				t.Fatal(err)
			}
			woke, err := sub.Wait(context.Background(), time.Minute)
			if !woke || err != nil {
				t.Fatalf("woke=%v err=%v", woke, err)
			}
		})
	}
}

func TestWakeIgnoresOtherFilesAndStopsOnCancel(t *testing.T) {
	dir := t.TempDir()
	w := New()
	sub, err := w.Subscribe(filepath.Join(dir, "chat.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	os.WriteFile(filepath.Join(dir, ".lock"), nil, 0o600)
	os.WriteFile(filepath.Join(dir, "read.json"), nil, 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	// the wait must end with the cancellation, not with a wake from the
	// lock file or another file of the directory
	go func() {
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	woke, err := sub.Wait(ctx, time.Minute)
	if woke || err != context.Canceled {
		t.Fatalf("woke=%v err=%v; want no wake for other files, then the cancellation", woke, err)
	}
}

// A directory target wakes for any file in it; a file target's name filter
// applies to its own directory only.
func TestWakeDirectoryTarget(t *testing.T) {
	agentDir, convDir := t.TempDir(), t.TempDir()
	w := New()
	subscribe := func() *Subscription {
		sub, err := w.Subscribe(filepath.Join(agentDir, "chat.jsonl"), convDir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sub.Close)
		return sub
	}
	// Files it did not ask for: no wake, only the cancellation.
	sub := subscribe()
	os.WriteFile(filepath.Join(agentDir, "read.json"), []byte("{}\n"), 0o644)
	os.WriteFile(filepath.Join(convDir, ".lock"), nil, 0o600)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	if woke, _ := sub.Wait(ctx, time.Minute); woke {
		t.Fatal("a file the subscription did not ask for woke it")
	}
	for _, path := range []string{filepath.Join(convDir, "cnv_1.json"), filepath.Join(agentDir, "chat.jsonl")} {
		sub := subscribe()
		if err := os.WriteFile(path, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if woke, err := sub.Wait(context.Background(), time.Minute); !woke || err != nil {
			t.Fatalf("%s: woke=%v err=%v", path, woke, err)
		}
	}
}

// A directory stays watched for linger after its last subscriber: a new
// subscription then wakes on changes (also when the directory was removed
// and made anew meanwhile, which ends a watch), and after linger with no
// subscriber the watch is gone.
func TestWakeLingers(t *testing.T) {
	old := linger
	linger = 200 * time.Millisecond
	t.Cleanup(func() { linger = old })
	root := t.TempDir()
	dir := filepath.Join(root, "agent")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w := New()
	waitFor := func(step string, change func() error) {
		t.Helper()
		sub, err := w.Subscribe(filepath.Join(dir, "chat.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		if err := change(); err != nil {
			t.Fatal(err)
		}
		if woke, err := sub.Wait(context.Background(), 10*time.Second); !woke || err != nil {
			t.Fatalf("%s: woke=%v err=%v", step, woke, err)
		}
	}
	write := func() error { return os.WriteFile(filepath.Join(dir, "chat.jsonl"), []byte("{}\n"), 0o644) }
	waitFor("first", write)
	waitFor("again while lingering", write)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	waitFor("after the directory was made anew", write)
	deadline := time.Now().Add(10 * time.Second)
	for {
		w.mu.Lock()
		watched := len(w.fsw.WatchList())
		w.mu.Unlock()
		if watched == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d watches left long after linger", watched)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
