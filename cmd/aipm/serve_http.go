package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"time"

	"aipm/fsstore"
	"aipm/mcpserver"
)

// checkHTTP refuses what --http must not do, before anything is opened:
// TLS flags without --http or without each other, and a non-loopback
// address in clear text unless --unsafe-plaintext says so.
func (o *serveOptions) checkHTTP() error {
	tlsGiven := o.tlsCert != "" || o.tlsKey != ""
	switch {
	case o.http == "" && (tlsGiven || o.unsafePlaintext):
		return usageError("--tls-cert, --tls-key and --unsafe-plaintext go with --http ADDR: add --http, or leave them out to serve stdio")
	case o.http == "":
		return nil
	case tlsGiven && (o.tlsCert == "" || o.tlsKey == ""):
		return usageError("--tls-cert and --tls-key go together: give both files, or neither")
	case tlsGiven && o.unsafePlaintext:
		return usageError("--unsafe-plaintext contradicts --tls-cert: leave it out, the server speaks TLS")
	}
	host, _, err := net.SplitHostPort(o.http)
	if err != nil {
		return usageError("--http %q is not host:port: use, e.g., 127.0.0.1:0 (port 0 picks a free one)", o.http)
	}
	if !tlsGiven && !o.unsafePlaintext && !loopbackHost(host) {
		return usageError("--http %s is not a loopback address, and passkeys would cross the network in clear text: add --tls-cert and --tls-key, or --unsafe-plaintext if the network is yours alone", o.http)
	}
	return nil
}

// loopbackHost says whether host names only this machine: localhost or a
// loopback IP. An empty host (all interfaces) is not.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serveHTTP serves MCP over streamable HTTP at o.http until ctx ends; then
// requests in flight get a few seconds, and the sessions opened through it
// end (reason process_exited), as at the end of aipm serve over stdio.
func serveHTTP(ctx context.Context, o *serveOptions, store *fsstore.Store) error {
	e := o.e
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: logLevel(e.getenv("AIPM_LOG"))}))
	scheme := "http"
	var tlsConf *tls.Config
	if o.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return tlsFilesError(o.tlsCert, o.tlsKey, err)
		}
		scheme, tlsConf = "https", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", o.http)
	if err != nil {
		return fmt.Errorf("serve --http: %w", err)
	}
	origin := scheme + "://" + ln.Addr().String()
	h, err := mcpserver.NewHTTP(store, log, version(), mcpserver.HTTPOptions{Origin: origin})
	if err != nil {
		ln.Close()
		return fmt.Errorf("serve --http: %w", err)
	}
	ln = h.Listener(ln) // connections counted by whom they name (below TLS)
	if tlsConf != nil {
		ln = tls.NewListener(ln, tlsConf)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	// At the end every request's context ends first: waits end, and a batch
	// whose answer cannot go out any more is taken back.
	base, endRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer endRequests()
	// The timeouts of a shared server (mcpserver.HTTPLimits); answers
	// announce the idle timeout (mcpserver.IdleTimeout).
	srv := h.Server(mux)
	srv.BaseContext = func(net.Listener) context.Context { return base }
	fmt.Fprintln(e.stdout, origin+"/mcp")
	log.Info("serving MCP over streamable HTTP", "url", origin+"/mcp")
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err = <-served:
	case <-ctx.Done():
		endRequests()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		err = srv.Shutdown(shutdown) // waits for the calls in flight to end
		cancel()
		if err != nil {
			srv.Close()
		}
	}
	h.Close(context.WithoutCancel(ctx))
	if err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("serve --http: %w", err)
	}
	return nil
}

// tlsFilesError says why --tls-cert and --tls-key were refused: a file
// that cannot be read, or files that are not a PEM certificate and its
// private key (crypto/tls's own words name its internals).
func tlsFilesError(cert, key string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return usageError("--tls-cert/--tls-key: cannot read %s (%v): give a PEM certificate and its private key", pe.Path, pe.Err)
	}
	return usageError("--tls-cert/--tls-key: %s and %s are not a PEM certificate and its matching private key: give the PEM files your certificate authority (or mkcert) wrote", cert, key)
}
