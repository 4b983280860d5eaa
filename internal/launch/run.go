package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"aipm/fsstore"
	"aipm/internal/clientconfig"
	"aipm/internal/clients"
	"aipm/internal/shell"
)

// Options are what Run needs: the project and its config, the agent to
// start (an AI agent of the project) and its spec, and the process's
// environment and streams.
type Options struct {
	Store          *fsstore.Store
	Config         *fsstore.Config
	Agent          string
	Spec           Spec
	Getenv         func(string) string
	Stdout, Stderr io.Writer
	// Root says aipm launch runs as root (os.Geteuid() == 0): Claude Code
	// then refuses --access full (rootRefusesFull).
	Root bool
}

// Run starts the client of o.Spec headless as o.Agent and waits for it:
// aipm launch. A client that exits with a failure is an error wrapping
// its *exec.ExitError. A client that will refuse to start (Claude Code
// with --access full as root) is not started: its human is told why, with
// the fix. When the client has exited, the tool calls it refused by its
// own permissions or sandbox reach its human in one sentence with the fix
// (reportRefused); the calls aipm's own hook denied are one line of the
// run's log.
func Run(ctx context.Context, o Options) error {
	store, cfg, agent, spec := o.Store, o.Config, o.Agent, o.Spec
	c, ok := clients.Get(spec.Client)
	if !ok {
		return fmt.Errorf("launch: %w", clients.Unknown(spec.Client))
	}
	program := shell.LookPath(o.Getenv("PATH"), c.Program)
	if program == "" {
		return fmt.Errorf("launch: %s", Missing(o.Getenv("PATH"), spec))
	}
	if msg := RootProblem(spec, agent, o.Root, o.Getenv); msg != "" {
		tellOutcome(ctx, o, fsstore.OutcomeFailed, msg)
		return fmt.Errorf("launch: %s was not started", c.Program)
	}
	// The hooks the client runs record the calls they deny under this id.
	launchID := o.Getenv(fsstore.EnvRunID)
	if fsstore.CheckID(fsstore.PrefixRun, launchID) != nil {
		launchID = fsstore.NewID(fsstore.PrefixRun)
	}
	env := os.Environ()
	if o.Getenv(fsstore.EnvPasskeyFile) == "" && o.Getenv(fsstore.EnvPasskey) == "" {
		a, _ := cfg.Agent(agent)
		cred, err := store.Startable(a)
		if err != nil {
			return fmt.Errorf("launch: %w", err)
		}
		env = append(env, fsstore.EnvPasskeyFile+"="+cred)
	}
	env = append(env, fsstore.EnvAgentID+"="+agent, fsstore.EnvProjectDir+"="+store.ProjectDir(), fsstore.EnvLaunchID+"="+launchID)
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("launch: cannot find this aipm's path, which the client starts as its MCP server: %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	prompt := launchPrompt(spec, agent, cfg.Project.Name, store.ProjectDir(), o.Getenv(fsstore.EnvPurpose))
	run := spec.run(exe, clientconfig.HookWord(o.Getenv("PATH"), exe), prompt, o.Getenv)
	run.Agent, run.ProjectDir = agent, store.ProjectDir()
	scratch, err := os.MkdirTemp("", "aipm-launch-")
	if err != nil {
		return fmt.Errorf("launch: cannot make the directory of this run's own files: %w", err)
	}
	defer os.RemoveAll(scratch)
	run.Scratch = scratch
	logs, err := store.LogDir(agent)
	if err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	run.StateDir = filepath.Join(logs, c.Name)
	launch := c.Launch(run)
	if err := clearOwned(launch.Owned, launch.Files); err != nil {
		return fmt.Errorf("launch: %s needs its own folders cleared before it starts: %w", c.Program, err)
	}
	if err := writeRunFiles(launch.Files); err != nil {
		return fmt.Errorf("launch: %s needs its settings written before it starts: %w", c.Program, err)
	}
	env = append(env, launch.Env...)
	cmd := exec.CommandContext(ctx, program, launch.Args...)
	// Ctrl-C or the watcher's SIGTERM: the client gets SIGTERM and a
	// moment to end its sessions before it is killed.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = store.ProjectDir()
	cmd.Env = env
	if launch.Stdin != "" {
		cmd.Stdin = strings.NewReader(launch.Stdin)
	}
	// What the client says last, on either stream, is most often why it
	// failed: its exit's error quotes it, so that the run's last log line
	// (what its human is told) is the client's words, not only an exit
	// status.
	said := &tail{}
	cmd.Stderr = io.MultiWriter(o.Stderr, said)
	out := c.Output(run, io.MultiWriter(o.Stdout, said))
	cmd.Stdout = out
	runErr := cmd.Run()
	reportRefused(ctx, o, launchID, out.Refusals())
	var ee *exec.ExitError
	if errors.As(runErr, &ee) {
		if last := fsstore.LastLine(said.bytes()); last != "" {
			return fmt.Errorf("launch: %s ended (%w), having said last: %s", c.Program, ee, last)
		}
		return fmt.Errorf("launch: %s ended: %w", c.Program, ee)
	}
	if runErr != nil {
		return fmt.Errorf("launch: run %s: %w", c.Program, runErr)
	}
	return nil
}

// tail keeps the last tailSize bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 8 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - tailSize; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.buf)
}

// reportRefused says what was refused in the client run launchID: the
// calls aipm's own hook denied (fsstore RunTable.TakeDenials) as one
// line of the run's log, and the client's own refusals, the rest of
// refused, to the agent's human as the run's outcome (tellOutcome).
func reportRefused(ctx context.Context, o Options, launchID string, refused []clients.Refusal) {
	denials, err := o.Store.Runs().TakeDenials(o.Agent, launchID)
	if err != nil {
		fmt.Fprintf(o.Stderr, "aipm: %v\n", err)
	}
	if line := deniedLine(denials); line != "" {
		fmt.Fprintln(o.Stderr, line)
	}
	if client := ownDenials(refused, denials); len(client) > 0 {
		tellOutcome(ctx, o, fsstore.OutcomeRefused, refusedProblem(o, client))
	}
}

// clearOwned removes from each of dirs (clients.Command's Owned) every
// entry that is not one of files.
func clearOwned(dirs []string, files []clients.File) error {
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		for _, e := range entries {
			path := filepath.Join(dir, e.Name())
			if slices.ContainsFunc(files, func(f clients.File) bool { return f.Path == path }) {
				continue
			}
			if err := os.RemoveAll(path); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeRunFiles writes the files a client's run needs (clients.Command's
// Files, each under the agent's StateDir), each whole: a temporary file
// beside it, renamed into place, readable by the user alone.
func writeRunFiles(files []clients.File) error {
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
			return err
		}
		tmp, err := os.CreateTemp(filepath.Dir(f.Path), "."+filepath.Base(f.Path)+".*")
		if err != nil {
			return err
		}
		_, err = tmp.Write(f.Data)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), f.Path)
		}
		if err != nil {
			os.Remove(tmp.Name())
			return err
		}
	}
	return nil
}
