package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"aipm/fsstore"
	"aipm/mcpserver"
)

func newCmdServe(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "The stdio MCP server an agent's CLI starts (see aipm mcp-config)",
		Long: `Serve the project's MCP tools over stdin and stdout, for one agent's CLI
(Claude Code, Codex, ...). stdout carries only protocol messages; logs go to
stderr (level from $AIPM_LOG: debug, info, warn, error). aipm mcp-config prints
the entry that starts it. It ends when stdin closes or on Ctrl-C.`,
		Example: "  aipm --dir /path/to/project serve",
		Args:    argsNone,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := e.findProject()
			if err != nil {
				return err
			}
			store, err := fsstore.Open(dir)
			if err != nil {
				return asUsage(err)
			}
			return serveMCP(cmd.Context(), e, store)
		},
	}
}

// serveMCP runs the MCP server for store over the process's stdio until
// the client goes away or ctx ends.
func serveMCP(ctx context.Context, e *env, store *fsstore.Store) error {
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: logLevel(e.getenv("AIPM_LOG"))}))
	srv := mcpserver.New(store, log, version())
	t := &mcp.IOTransport{Reader: io.NopCloser(e.stdin), Writer: nopWriteCloser{e.stdout}}
	if err := srv.Run(ctx, t); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

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
