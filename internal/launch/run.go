package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"aipm/fsstore"
	"aipm/internal/clientconfig"
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
}

// Run starts the client of o.Spec headless as o.Agent and waits for it:
// aipm launch. A client that exits with a failure is an error wrapping
// its *exec.ExitError.
func Run(ctx context.Context, o Options) error {
	store, cfg, agent, spec := o.Store, o.Config, o.Agent, o.Spec
	c := launchClients[spec.Client]
	program := shell.LookPath(o.Getenv("PATH"), c.program)
	if program == "" {
		return fmt.Errorf("launch: %s", Missing(o.Getenv("PATH"), spec))
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
	env = append(env, fsstore.EnvAgentID+"="+agent, fsstore.EnvProjectDir+"="+store.ProjectDir())
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("launch: cannot find this aipm's path, which the client starts as its MCP server: %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	prompt := launchPrompt(spec, agent, cfg.Project.Name, store.ProjectDir(), o.Getenv(fsstore.EnvPurpose))
	cmd := exec.CommandContext(ctx, program, c.argv(spec, exe, clientconfig.HookWord(o.Getenv("PATH"), exe), prompt)...)
	// Ctrl-C or the watcher's SIGTERM: the client gets SIGTERM and a
	// moment to end its sessions before it is killed.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = store.ProjectDir()
	cmd.Env = env
	cmd.Stderr = o.Stderr
	var out bytes.Buffer
	if c.finish != nil {
		cmd.Stdout = &out
	} else {
		cmd.Stdout = o.Stdout
	}
	runErr := cmd.Run()
	if c.finish != nil {
		text, refused := c.finish(out.Bytes())
		fmt.Fprint(o.Stdout, text)
		if len(refused) > 0 {
			reportRefused(ctx, o, refused)
		}
	}
	var ee *exec.ExitError
	if errors.As(runErr, &ee) {
		return fmt.Errorf("launch: %s ended: %w", c.program, ee)
	}
	if runErr != nil {
		return fmt.Errorf("launch: run %s: %w", c.program, runErr)
	}
	return nil
}

// reportRefused tells the agent's human that the client refused tool
// calls: a system message to its parent when that is a human, else to
// every human of the project; and a line in the run's log.
func reportRefused(ctx context.Context, o Options, refused []string) {
	store, cfg, agent, spec := o.Store, o.Config, o.Agent, o.Spec
	counts := map[string]int{}
	var names []string
	for _, t := range refused {
		if counts[t] == 0 {
			names = append(names, t)
		}
		counts[t]++
	}
	for i, n := range names {
		if counts[n] > 1 {
			names[i] = fmt.Sprintf("%s ×%d", n, counts[n])
		}
	}
	msg := fmt.Sprintf("%s's %s refused %d tool call(s) (%s) with access %q: its work may be incomplete even if it reported done; "+
		"widen what it may do with aipm agent set %s --client %s --access full, or check its log (aipm status)",
		agent, spec.Client, len(refused), strings.Join(names, ", "), spec.Access, agent, spec.Client)
	fmt.Fprintln(o.Stderr, "aipm: "+msg)
	var to []string
	if a, ok := cfg.Agent(agent); ok {
		if p, ok := cfg.Agent(a.Parent); ok && p.Type == fsstore.AgentHuman {
			to = []string{p.ID}
		}
	}
	if len(to) == 0 {
		for _, a := range cfg.Agents {
			if a.Type == fsstore.AgentHuman {
				to = append(to, a.ID)
			}
		}
	}
	for _, h := range to {
		if _, err := store.Send(ctx, cfg, fsstore.OutgoingMessage{From: fsstore.SystemSender, To: h, Content: msg, Kind: fsstore.KindSystem}); err != nil {
			fmt.Fprintf(o.Stderr, "aipm: tell %s: %v\n", h, err)
		}
	}
}
