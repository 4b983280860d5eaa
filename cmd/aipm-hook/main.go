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
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := hook.Command(ctx, os.Args[1:], hook.Env{Getenv: os.Getenv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}
