package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"

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
	// agent, from --agent, holds that agent's credential saved on this
	// machine (ssh entries: the client's entry carries no secret).
	agent string
}

func newCmdServe(e *env) *cobra.Command {
	o := &serveOptions{e: e}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "The stdio MCP server an agent's CLI starts (see aipm mcp-config)",
		Long: `Serve the project's MCP tools over stdin and stdout, for one agent's CLI
(Claude Code, Codex, ...). stdout carries only protocol messages; logs go to
stderr (level from $AIPM_LOG: debug, info, warn, error). aipm mcp-config prints
the entry that starts it. It ends when stdin closes or on Ctrl-C. One that
cannot open its project or read its credential says why on stderr and still
serves: it lists its tools and answers every call with why and the fix.

With --http ADDR it serves MCP's streamable HTTP transport instead, for
agents on other machines: it prints the endpoint URL on stdout (one line) and
serves until Ctrl-C or SIGTERM. Each request carries an AI agent's passkey as
its bearer token (Authorization: Bearer aipk_...), and acts as that agent.
ADDR is loopback unless TLS is given (--tls-cert, --tls-key) or
--unsafe-plaintext says passkeys may cross the network in clear text.
aipm mcp-config --url prints the clients' entry.

Over ssh (an agent on another machine): ssh -T home aipm --dir PATH serve
--agent ID, where --agent holds the agent's passkey saved on this machine by
aipm agent passkey ID --save, so that the remote entry carries no secret.`,
		Example: `  aipm --dir /path/to/project serve
  ssh -T home aipm --dir /path/to/project serve --agent coder
  aipm serve --http 127.0.0.1:0
  aipm serve --http 0.0.0.0:8443 --tls-cert cert.pem --tls-key key.pem`,
		Args: argsNone,
		RunE: func(cmd *cobra.Command, args []string) error { return serveRun(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.agent, "agent", "", "hold this agent's passkey saved on this machine (aipm agent passkey ID --save), as for ssh")
	f.StringVar(&o.http, "http", "", "serve MCP over streamable HTTP at ADDR (host:port; port 0 picks a free one) instead of stdio")
	f.StringVar(&o.tlsCert, "tls-cert", "", "with --http: serve HTTPS with this certificate (PEM)")
	f.StringVar(&o.tlsKey, "tls-key", "", "with --http: the certificate's private key (PEM)")
	f.BoolVar(&o.unsafePlaintext, "unsafe-plaintext", false, "with --http: allow a non-loopback ADDR without TLS (passkeys cross the network in clear text)")
	return cmd
}

func serveRun(ctx context.Context, o *serveOptions) error {
	if o.http != "" && o.agent != "" {
		return usageError("serve --http and --agent do not go together: over HTTP each request's bearer token says which agent calls")
	}
	if err := o.checkHTTP(); err != nil {
		return err
	}
	store, err := o.e.openStore()
	if err != nil && o.http != "" {
		// Refused at start: the human who started it reads why.
		return err
	}
	log := slog.New(slog.NewTextHandler(o.e.stderr, &slog.HandlerOptions{Level: logLevel(o.e.getenv("AIPM_LOG"))}))
	if err != nil {
		return serveUnavailable(ctx, o.e, log, err)
	}
	defer store.UseSpares()() // the spares this server took, made again before it exits
	if o.http != "" {
		return serveHTTP(ctx, o, store)
	}
	cred, from, err := serveHeld(o.e, store, o.agent)
	if err != nil {
		return serveUnavailable(ctx, o.e, log, err)
	}
	srv := mcpserver.New(store, log, version())
	if cred != nil {
		srv.HoldCredential(*cred)
		log.Info("holding the agent's credential from "+from, "agent", *cred) // its LogValue redacts the passkey
	}
	return serveMCP(ctx, o.e, srv, log)
}

// serveUnavailable serves, over stdio, a server that cannot serve because
// of err (mcpserver.Unavailable): its client shows it connected, and every
// tool call answers why and the fix, said once on stderr too. It ends as
// serve does, when stdin closes (exit 0: it served what it could).
func serveUnavailable(ctx context.Context, e *env, log *slog.Logger, err error) error {
	why := serveProblem(err)
	fmt.Fprintln(e.stderr, "aipm:", why)
	return serveMCP(ctx, e, mcpserver.Unavailable(why, log, version()), log)
}

// serveProblem is the one sentence of a server that cannot serve: err, or,
// when no project holds the directory its MCP client started it in, where
// it looked and the ways to point it at one.
func serveProblem(err error) string {
	if errors.Is(err, fsstore.ErrNoProject) {
		wd, _ := os.Getwd()
		return fmt.Sprintf("no aipm project: no %s in %s, where the MCP client started aipm serve, or in any parent; "+
			"start the client in the project's directory, start the server as aipm --dir PATH serve or with AIPM_DIR=PATH, "+
			"or create a project with aipm init", fsstore.DirName, wd)
	}
	return cliMessage(err)
}

// serveHeld is the credential aipm serve holds and where it comes from:
// the one saved on this machine for agent (serve --agent), else the
// environment's, if any.
func serveHeld(e *env, store *fsstore.Store, agent string) (cred *mcpserver.Credential, from string, err error) {
	if agent != "" {
		cred, err = serveSavedCredential(e, store, agent)
		return cred, "its saved passkey file", err
	}
	cred, err = serveCredential(e.getenv)
	return cred, "the environment", asUsage(err)
}

// serveSavedCredential is the credential serve --agent holds: the one
// saved on this machine, never beside one from the environment.
func serveSavedCredential(e *env, store *fsstore.Store, agent string) (*mcpserver.Credential, error) {
	if env, err := serveCredential(e.getenv); err != nil || env != nil {
		return nil, usageError("serve --agent and AIPM_AGENT_ID are both set: keep one (--agent reads the passkey saved on this machine)")
	}
	cfg, err := store.LoadConfig()
	if err != nil {
		return nil, err
	}
	if err := agentRef(cfg, agent, "--agent"); err != nil {
		return nil, err
	}
	if err := aiAgent(cfg, agent, "only an AI agent's CLI starts aipm serve"); err != nil {
		return nil, err
	}
	cred, err := store.SavedCredential(agent)
	return cred, asUsage(err)
}

// serveMCP runs srv over the process's stdio until the client goes away
// or ctx ends.
func serveMCP(ctx context.Context, e *env, srv *mcpserver.Server, log *slog.Logger) error {
	// A client gone mid-answer (ssh's link cut: sshd closes the pipe) is
	// a write error that ends the server and its sessions, not a SIGPIPE
	// that kills it before it ends them.
	signal.Ignore(syscall.SIGPIPE)
	stdin := e.stdin
	if f, ok := stdin.(*os.File); ok {
		r, done := mcpserver.Pollable(f)
		defer done()
		stdin = r
	}
	if e.getenv("GOMAXPROCS") == "" {
		// One scheduler slot: a server answers one agent, a request at a time
		// (P2: 10% less CPU, a quarter fewer context switches per send).
		runtime.GOMAXPROCS(1)
	}
	if e.getenv("GOGC") == "" {
		// Collect at half again the live heap, not twice (operations.md: P5).
		debug.SetGCPercent(50)
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
