// Command aipm coordinates AI coding agents and humans through a project's
// .ai-pm/ directory. `aipm serve` is the stdio MCP server an agent starts;
// every other subcommand is what a human or a script does.
//
// The command tree is built with cobra: one file per command (or per noun
// and verb), each with an options struct, a constructor that only parses
// flags into it, and a run function that does the work.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

func main() { os.Exit(mainExit()) }

// mainExit runs aipm with the process's arguments and environment and
// returns its exit code (see exitCode). SIGINT and SIGTERM cancel the
// context; a command that ends because of them exits 130.
func mainExit() int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var interrupted atomic.Bool
	go func() {
		if _, ok := <-sigs; ok {
			interrupted.Store(true)
			cancel()
			signal.Stop(sigs) // a second Ctrl-C kills at once
		}
	}()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	code := exitCode(err, interrupted.Load())
	if err != nil && code != exitInterrupted {
		if msg := err.Error(); msg != "" {
			fmt.Fprintln(os.Stderr, "aipm:", msg)
		}
	}
	return code
}

// run builds the command tree and executes args: everything testable lives
// here, with no global state.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	e := newEnv(getenv, stdin, stdout, stderr)
	root := newCmdRoot(e)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}
