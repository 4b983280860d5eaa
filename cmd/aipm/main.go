// Command aipm coordinates AI coding agents and humans through a project's
// .ai-pm/ directory. `aipm serve` is the stdio MCP server an agent starts;
// every other subcommand is what a human or a script does.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

func main() { os.Exit(mainExit()) }

func mainExit() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(os.Stderr, "aipm:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "aipm:", err)
	return 1
}

// exitError carries an exit code other than 1; a nil err prints nothing.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// usageError is a mistake in the command line: exit 2.
func usageError(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

// env is what a subcommand may use: nothing global.
type env struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	dir    string // --dir, if given
}

type command struct {
	name    string
	summary string // empty: an internal command, not listed by help
	run     func(ctx context.Context, e *env, args []string) error
}

func commands() []command {
	return []command{
		{"init", "create .ai-pm/ in the current directory (or --dir)", runInit},
		{"agent", "add or list agents: agent add ID --type ai|human, agent list", runAgent},
		{"doctor", "check every file of .ai-pm/; --repair quarantines torn and invalid lines", runDoctor},
		{"demo", "walk through aipm on a throw-away project (no agents, no network)", runDemo},
		{"task", "add, list, show and change tasks: task add|list|show|assign|status|approve|reject", runTask},
		{"send", "send a human's message to an agent: send --as HUMAN --to AGENT TEXT (- reads stdin)", runSend},
		{"inbox", "a human's unread messages: inbox --as HUMAN [--peek] [--limit N] [--json]", runInbox},
		{"log", "an agent's chat transcript: log AGENT [--follow] [--json] [--last N]", runLog},
		{"interrupt", "stop an AI agent's work: interrupt AGENT REASON [--task ID]", runInterrupt},
		{"mcp-config", "print the MCP server config of this project for claude or codex", runMCPConfig},
		{"serve", "the stdio MCP server an agent starts (see aipm mcp-config)", runServe},
		{"bench", "measure the performance targets against their raw floors (--quick for a smoke run)", runBench},
		{"bench-floor-reader", "", runBenchFloorReader},
		{"bench-floor-writer", "", runBenchFloorWriter},
		{"version", "print the version", runVersion},
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	e := &env{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	fs := flag.NewFlagSet("aipm", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&e.dir, "dir", "", "project directory")
	if err := fs.Parse(args); err != nil {
		return usageError("%v: run aipm help", err)
	}
	args = fs.Args()
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printUsage(stdout)
		return nil
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, e, args[1:])
		}
	}
	return usageError("unknown command %q: run aipm help for the list", args[0])
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: aipm [--dir PROJECT] COMMAND [ARGS]")
	fmt.Fprintln(w)
	cmds := commands()
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].name < cmds[j].name })
	for _, c := range cmds {
		if c.summary == "" {
			continue
		}
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
}

// flags returns a FlagSet for a subcommand that also accepts --dir.
func (e *env) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("aipm "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&e.dir, "dir", e.dir, "project directory")
	return fs
}

// parse parses flags anywhere among the arguments (Go's flag package stops
// at the first positional one) and returns the positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, usageError("%s: %s", fs.Name(), flagList(fs))
			}
			return nil, usageError("%s: %v (flags: %s)", fs.Name(), err, flagList(fs))
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func flagList(fs *flag.FlagSet) string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name) })
	return strings.Join(names, " ")
}
