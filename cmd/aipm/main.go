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
	"io"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"

	"aipm/internal/remote"
	_ "aipm/internal/stackstart" // the main goroutine's stack grown first
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
	return report(os.Stderr, err, interrupted.Load())
}

// run builds the command tree and executes args: everything testable lives
// here, with no global state.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	e := newEnv(getenv, stdin, stdout, stderr)
	if value, rest, ok, err := remote.Split(args); err != nil {
		return asUsage(err)
	} else if ok {
		// aipm --remote HOST[:PATH] COMMAND: the command runs there.
		return runRemote(ctx, e, value, rest)
	}
	var root *cobra.Command
	switch {
	case isPlainServe(args):
		// An agent's CLI starts aipm serve and waits for its first answer
		// (DESIGN section 13, P4): the other commands are not built.
		root = newRoot(e)
		root.AddCommand(newCmdServe(e))
	case isHook(args):
		// A client runs aipm hook around every tool call (P8): the same.
		root = newRoot(e)
		root.AddCommand(newCmdHook(e))
	default:
		root = newCmdRoot(e)
	}
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		return err
	}
	return e.helpErr
}

// isHook reports whether args run aipm hook, after nothing but the global
// flags --dir and --utc: the tree with hook alone parses the rest (the
// hook's flags) as the whole tree would.
func isHook(args []string) bool {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "hook":
			return true
		case a == "--dir" && i+1 < len(args):
			i++
		case strings.HasPrefix(a, "--dir="), a == "--utc", a == "--utc=true", a == "--utc=false":
		default:
			return false
		}
	}
	return false
}

// isPlainServe reports whether args run aipm serve with nothing but the
// global flags --dir and --utc and serve's --agent: then the whole tree would find serve and
// parse the same flags, so the tree with serve alone behaves the same.
// Anything else (help, a typo, an extra argument) takes the whole tree.
func isPlainServe(args []string) bool {
	serve := false
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "serve" && !serve:
			serve = true
		case serve && a == "--agent" && i+1 < len(args):
			i++
		case serve && strings.HasPrefix(a, "--agent="):
		case a == "--dir" && i+1 < len(args):
			i++ // its value, whatever it is
		case strings.HasPrefix(a, "--dir="), a == "--utc", a == "--utc=true", a == "--utc=false":
		default:
			return false
		}
	}
	return serve
}
