package watcher

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"aipm/fsstore"
)

// TestConfigSavedInPlace: config.toml saved in place (truncated, then
// written: cat new > config.toml) again and again while aipm watch runs in
// its own process; a message sent while the file is empty still gets its
// chat trigger every time, and the watcher never adopts the empty file.
func TestConfigSavedInPlace(t *testing.T) {
	p := newProject(t, "", nil)
	path := p.store.ConfigPath()
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := p.cfg()
	watch := exec.Command(os.Args[0], "-test.run=^$", "helper:watch")
	watch.Env = append(os.Environ(), fsstore.EnvProjectDir+"="+p.store.ProjectDir())
	var log syncBuffer
	watch.Stderr = &log
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		watch.Process.Kill()
		watch.Wait()
		if t.Failed() {
			t.Logf("watcher log:\n%s", log.String())
		}
	})
	eventually(t, "the watcher running", func() bool { return log.count(`msg=watching`) == 1 })

	ctx := context.Background()
	trigger := p.path("pending/coder.chat.json")
	for i := range envN("AIPM_TEST_SAVES", 10) {
		reloads := log.count(`config (not )?reloaded`)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		// The empty moment, once the watcher has looked at it: a message is
		// sent in it (with the config read before, as a running process
		// holds it).
		eventually(t, "the watcher reading the empty config", func() bool { return log.count(`config (not )?reloaded`) > reloads })
		if _, err := p.store.Send(ctx, cfg, fsstore.OutgoingMessage{From: "lead", To: "coder", Content: fmt.Sprintf("message %d", i)}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(good); err != nil {
			t.Fatal(err)
		}
		f.Close()
		eventually(t, fmt.Sprintf("the trigger of message %d", i), func() bool { return p.exists("pending/coder.chat.json") })
		if _, _, err := p.store.Unread(ctx, "coder", 100, false); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(trigger); err != nil {
			t.Fatal(err)
		}
	}
	if n := log.count(`config reloaded" agents=0`); n > 0 {
		t.Errorf("the watcher adopted a config with no agents %d times", n)
	}
}

// envN is the positive integer in the environment variable name, or def.
func envN(name string, def int) int {
	var n int
	if _, err := fmt.Sscan(os.Getenv(name), &n); err == nil && n > 0 {
		return n
	}
	return def
}
