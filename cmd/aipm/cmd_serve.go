package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"

	"aipm/fsstore"
	"aipm/mcpserver"
)

// runServe is the stdio MCP server an agent's CLI starts. stdout carries
// only protocol messages; logs go to stderr (level from AIPM_LOG).
func runServe(ctx context.Context, e *env, args []string) error {
	fs := e.flags("serve")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("serve takes no arguments, got %q", pos[0])
	}
	dir, err := e.findProject()
	if err != nil {
		return err
	}
	store, err := fsstore.Open(dir)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: logLevel(e.getenv("AIPM_LOG"))}))
	srv := mcpserver.New(store, log, version())
	if err := srv.Run(ctx, mcpserver.Stdio(e.stdin, e.stdout, log)); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

func logLevel(s string) slog.Level {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}
