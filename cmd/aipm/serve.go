package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"aipm/fsstore"
	"aipm/mcpserver"
)

type serveOptions struct {
	e *env
	// aipm serve --http (serve_http.go)
	http            string
	tlsCert, tlsKey string
	unsafePlaintext bool
}

func newCmdServe(e *env) *cobra.Command {
	o := &serveOptions{e: e}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "The stdio MCP server an agent's CLI starts (see aipm mcp-config)",
		Long: `Serve the project's MCP tools over stdin and stdout, for one agent's CLI
(Claude Code, Codex, ...). stdout carries only protocol messages; logs go to
stderr (level from $AIPM_LOG: debug, info, warn, error). aipm mcp-config prints
the entry that starts it. It ends when stdin closes or on Ctrl-C.

With --http ADDR it serves MCP's streamable HTTP transport instead, for
agents on other machines: it prints the endpoint URL on stdout (one line) and
serves until Ctrl-C or SIGTERM. Each request carries an AI agent's passkey as
its bearer token (Authorization: Bearer aipk_...), and acts as that agent.
ADDR is loopback unless TLS is given (--tls-cert, --tls-key) or
--unsafe-plaintext says passkeys may cross the network in clear text.
aipm mcp-config --url prints the clients' entry.`,
		Example: `  aipm --dir /path/to/project serve
  aipm serve --http 127.0.0.1:0
  aipm serve --http 0.0.0.0:8443 --tls-cert cert.pem --tls-key key.pem`,
		Args: argsNone,
		RunE: func(cmd *cobra.Command, args []string) error { return serveRun(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.http, "http", "", "serve MCP over streamable HTTP at ADDR (host:port; port 0 picks a free one) instead of stdio")
	f.StringVar(&o.tlsCert, "tls-cert", "", "with --http: serve HTTPS with this certificate (PEM)")
	f.StringVar(&o.tlsKey, "tls-key", "", "with --http: the certificate's private key (PEM)")
	f.BoolVar(&o.unsafePlaintext, "unsafe-plaintext", false, "with --http: allow a non-loopback ADDR without TLS (passkeys cross the network in clear text)")
	return cmd
}

func serveRun(ctx context.Context, o *serveOptions) error {
	if err := o.checkHTTP(); err != nil {
		return err
	}
	store, err := o.e.openStore()
	if err != nil {
		return err
	}
	if o.http != "" {
		return serveHTTP(ctx, o, store)
	}
	return serveMCP(ctx, o.e, store)
}

// serveMCP runs the MCP server for store over the process's stdio until
// the client goes away or ctx ends.
func serveMCP(ctx context.Context, e *env, store *fsstore.Store) error {
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: logLevel(e.getenv("AIPM_LOG"))}))
	cred, err := serveCredential(e.getenv)
	if err != nil {
		return asUsage(err)
	}
	srv := mcpserver.New(store, log, version())
	if cred != nil {
		srv.HoldCredential(*cred)
		log.Info("holding the agent's credential from the environment", "agent", *cred) // its LogValue redacts the passkey
	}
	stdin := e.stdin
	if f, ok := stdin.(*os.File); ok {
		r, done := pollable(f)
		defer done()
		stdin = r
	}
	if e.getenv("GOMAXPROCS") == "" {
		// One scheduler slot: a server answers one agent, mostly one
		// request at a time, and its time goes to waking up, not computing.
		// Measured under aipm bench's P2: 10% less CPU and a quarter fewer
		// context switches per send than with one slot per core.
		runtime.GOMAXPROCS(1)
	}
	if err := srv.Run(ctx, mcpserver.Stdio(stdin, e.stdout, log)); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
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

// serveCredential is the agent credential aipm serve may hold from its
// environment (fsstore.CredentialFromEnv).
func serveCredential(getenv func(string) string) (*mcpserver.Credential, error) {
	return fsstore.CredentialFromEnv(getenv)
}
