package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"aipm/fsstore"
)

// TestAgentRemoveKeepsConcurrentHandEdits: `aipm agent remove` (its own
// process) while this process saves config.toml by hand, over and over, as
// editors do. aipm's write is compare-and-swap: no save of the human's is
// ever lost, and a save in place (the project's name rewritten where it
// stands) never loses the removal either. An editor that saves by
// rename-replace writes back the whole file it read, so it may itself
// overwrite aipm's change (the editor's lost update, not aipm's): that is
// only counted.
func TestAgentRemoveKeepsConcurrentHandEdits(t *testing.T) {
	for _, tc := range []struct {
		name string
		save func(path, tag string) error
		// kept says whether the saves tagged so far all survive in data.
		kept func(data []byte, tags []string) bool
	}{
		{"in place", renameProjectInPlace, func(data []byte, tags []string) bool {
			return bytes.Contains(data, []byte(`name = "e`+tags[len(tags)-1]+`"`))
		}},
		{"rename-replace", commentAtTop, func(data []byte, tags []string) bool {
			for _, tag := range tags {
				if !bytes.Contains(data, []byte("# hand edit "+tag+"\n")) {
					return false
				}
			}
			return true
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := fsstore.Init(dir, "edits"); err != nil {
				t.Fatal(err)
			}
			store, err := fsstore.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			config := store.ConfigPath()
			var tags []string
			clobbered := 0
			for round := range 8 {
				agent := fmt.Sprintf("x%d", round)
				if _, err := store.AddAgent(ctx, fsstore.NewAgent{ID: agent, Type: fsstore.AgentAI}); err != nil {
					t.Fatal(err)
				}
				remove := exec.Command("aipm", "--dir", dir, "agent", "remove", agent)
				var out bytes.Buffer
				remove.Stdout, remove.Stderr = &out, &out
				if err := remove.Start(); err != nil {
					t.Fatal(err)
				}
				var done atomic.Bool
				waited := make(chan error, 1)
				go func() { waited <- remove.Wait(); done.Store(true) }()
				// Saves while the command runs, a few milliseconds apart (a
				// very fast human), fewer than the races aipm re-applies its
				// change through: it must never need to give up.
				for i := 0; i < savesPerRemoval && !done.Load(); i++ {
					tag := fmt.Sprintf("%02d%02d", round, i)
					if err := tc.save(config, tag); err != nil {
						t.Fatal(err)
					}
					tags = append(tags, tag)
					time.Sleep([]time.Duration{time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond, 80 * time.Millisecond}[round%4])
				}
				if err := <-waited; err != nil {
					t.Fatalf("aipm agent remove %s: %v\n%s", agent, err, out.String())
				}
				data, err := os.ReadFile(config)
				if err != nil {
					t.Fatal(err)
				}
				if !tc.kept(data, tags) {
					t.Fatalf("round %d: a save of the human's was lost\n%s", round, data)
				}
				if bytes.Contains(data, []byte(fmt.Sprintf("id = %q", agent))) {
					if tc.name == "in place" {
						t.Fatalf("round %d: the removal of %s was lost\n%s", round, agent, data)
					}
					clobbered++
				}
			}
			t.Logf("%d saves by hand; the editor overwrote aipm's removal %d times", len(tags), clobbered)
		})
	}
}

// savesPerRemoval is how many hand saves race one aipm agent remove: fewer
// than the saves EditConfig outlasts (configRaces), so that every removal
// succeeds however slow the machine.
const savesPerRemoval = 5

// renameProjectInPlace rewrites the project's name ("edits" at first, the
// same length every time) where it stands in the file, as an editor that
// saves in place does, with no lock.
func renameProjectInPlace(path, tag string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	i := bytes.Index(data, []byte(`name = "`))
	if i < 0 {
		return fmt.Errorf("no name in %s", data)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt([]byte("e"+tag), int64(i+len(`name = "`))); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// commentAtTop saves the file as most editors do: the whole new text (a
// comment added as the first line) to a temporary file, renamed over the
// old one, with no lock.
func commentAtTop(path, tag string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), ".config.toml.swp")
	if err := os.WriteFile(tmp, append([]byte("# hand edit "+tag+"\n"), data...), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// The constructor only parses flags into options: checked with a runF
// that records them, without a project.
func TestAgentRemoveFlags(t *testing.T) {
	e := newEnv(func(string) string { return "" }, strings.NewReader(""), io.Discard, io.Discard)
	for _, tc := range []struct {
		args  []string
		agent string
		force bool
		code  int
	}{
		{args: []string{"coder"}, agent: "coder"},
		{args: []string{"--force", "coder", "--json"}, agent: "coder", force: true},
		{args: []string{}, code: exitUsage},
		{args: []string{"a", "b"}, code: exitUsage},
	} {
		var got *agentRemoveOptions
		cmd := newCmdAgentRemove(e, func(o *agentRemoveOptions) error { got = o; return nil })
		cmd.SetArgs(tc.args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		err := cmd.Execute()
		if code := exitCode(err, false); code != tc.code {
			t.Errorf("agent remove %q: exit %d (%v), want %d", tc.args, code, err, tc.code)
			continue
		}
		if tc.code == 0 && (got == nil || got.Agent != tc.agent || got.Force != tc.force) {
			t.Errorf("agent remove %q: options %+v", tc.args, got)
		}
	}
}
