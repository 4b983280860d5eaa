// Command aipm-hook is `aipm hook` in a binary of its own: Claude Code and
// Codex run a hook around every tool call, and this one starts in about
// the time of a hello-world Go program, where aipm (which links the MCP
// SDK with its HTTP, crypto and JSON Schema packages) takes some 3 ms more
// (aipm-bench's P8a). It takes the same flags and does the same work
// (package hook); aipm mcp-config --write names it when it is installed
// beside aipm.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"aipm/hook"
	_ "aipm/internal/stackstart" // the main goroutine's stack grown first
)

func main() {
	code := hook.Command(context.Background(), os.Args[1:], hook.Env{
		Getenv: os.Getenv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Interrupt: interrupt,
	})
	os.Exit(code)
}

// interrupt is ctx cancelled by SIGINT and SIGTERM (hook.Env.Interrupt:
// the idle wake's; a short hook leaves them to end the process).
func interrupt(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}
