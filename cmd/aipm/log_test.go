package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"aipm/fsstore"
)

// lockedBuffer is a bytes.Buffer that run's goroutine writes while the test reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// background is a command run until the test cancels it: log --follow,
// status --watch, notifications --follow.
type background struct {
	stdout, stderr lockedBuffer
	cancel         context.CancelFunc
	done           chan error
}

// runInBackground runs aipm with args in a goroutine.
func runInBackground(t *testing.T, args ...string) *background {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	b := &background{cancel: cancel, done: make(chan error, 1)}
	go func() {
		getenv := func(string) string { return "" }
		b.done <- run(ctx, args, getenv, strings.NewReader(""), &b.stdout, &b.stderr)
	}()
	return b
}

// stop cancels the command and checks that it returned nil, soon, with
// nothing on stderr.
func (b *background) stop(t *testing.T) {
	t.Helper()
	b.cancel()
	select {
	case err := <-b.done:
		if err != nil {
			t.Errorf("run returned %v after cancel; want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the command did not return after its context was cancelled")
	}
	if b.stderr.String() != "" {
		t.Errorf("stderr: %s", b.stderr.String())
	}
}

// TestLogFollow: aipm log --follow prints each new message once, also
// after an editor replaced the chat file by rename, and ends cleanly when
// its context is cancelled.
func TestLogFollow(t *testing.T) {
	dir := t.TempDir()
	store, cfg := newChatProject(t, dir)
	cmd := runInBackground(t, "--dir", dir, "log", "bob", "--follow")
	stdout := &cmd.stdout

	sendToBob(t, store, cfg, "first message")
	waitPrinted(t, stdout, "alice → bob: first message")

	replaceByRename(t, filepath.Join(dir, fsstore.DirName, "agents", "bob", "chat.jsonl"))
	sendToBob(t, store, cfg, "second message")
	waitPrinted(t, stdout, "alice → bob: second message")
	sendToBob(t, store, cfg, "third message") // anything printed twice comes before it
	waitPrinted(t, stdout, "alice → bob: third message")

	for _, text := range []string{"first message", "second message", "third message"} {
		if n := strings.Count(stdout.String(), text); n != 1 {
			t.Errorf("%q printed %d times; want once. stdout:\n%s", text, n, stdout.String())
		}
	}
	cmd.stop(t)
}

func newChatProject(t *testing.T, dir string) (*fsstore.Store, *fsstore.Config) {
	t.Helper()
	if _, err := fsstore.Init(dir, "follow"); err != nil {
		t.Fatal(err)
	}
	store, err := fsstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []fsstore.NewAgent{{ID: "alice", Type: fsstore.AgentHuman}, {ID: "bob", Type: fsstore.AgentAI}} {
		if _, err := store.AddAgent(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := store.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	return store, cfg
}

func sendToBob(t *testing.T, store *fsstore.Store, cfg *fsstore.Config, text string) {
	t.Helper()
	m := fsstore.OutgoingMessage{From: "alice", To: "bob", Content: text}
	if _, err := store.Send(context.Background(), cfg, m); err != nil {
		t.Fatal(err)
	}
}

// waitPrinted polls out until it contains want, or fails after a deadline.
func waitPrinted(t *testing.T, out *lockedBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("%q not printed within 10s; stdout:\n%s", want, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// replaceByRename saves path as an editor does: the same content written
// to a temporary file, renamed over the original (a new inode).
func replaceByRename(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".swp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(before, after) {
		t.Fatal("the rename did not give the chat file a new inode")
	}
}
