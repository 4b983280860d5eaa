package mcpserver

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
	"aipm/wake"
)

// HTTP serves MCP over the streamable HTTP transport (aipm serve --http):
// the go-sdk's handler behind aipm's guards. Every request carries an AI
// agent's passkey as its bearer token; the agent is whoever the token is
// the passkey of (fsstore.AgentOfPasskey), never what the model says. Each
// agent's requests go to a Server of its own, locked to that credential,
// built once and shared by its MCP sessions; all of them share one
// fsnotify watcher. The gate is the stdio one: sessions (session_token),
// waits, interrupts and the notification line work as over stdio.
//
// What is refused, in order: a request whose Origin header is not the
// server's own (403: a web page; CLIs send none), any request from a
// client address in back-off after failed tokens (429 with Retry-After),
// a missing or wrong token (401, WWW-Authenticate: Bearer; counted per
// client address on fsstore.BackoffAfter's schedule), and then what the
// SDK refuses: a Host that is not loopback on a loopback listener (DNS
// rebinding), an MCP session of another agent (403), a body past MaxFrame
// (413).
type HTTP struct {
	store   *fsstore.Store
	log     *slog.Logger
	version string
	origin  string
	wake    *wake.Hub
	links   *links
	config  *Server // reads the config for the token check (no tools)
	handler http.Handler

	mu       sync.Mutex
	servers  map[[32]byte]*Server // by the SHA-256 of the bearer token
	failures map[string]*clientFailures
	now      func() time.Time
}

// HTTPOptions configure NewHTTP.
type HTTPOptions struct {
	// Origin is the server's own origin (scheme://host:port), the one
	// Origin header a request may carry.
	Origin string
	// Now is the clock of the back-off (nil: time.Now); tests set it.
	Now func() time.Time
}

// clientFailures are one client address's failed tokens in a row.
type clientFailures struct {
	n         int
	notBefore time.Time
}

// NewHTTP returns the handler of aipm serve --http for store. The MCP
// sessions it keeps end after the config's session idle timeout without a
// request.
func NewHTTP(store *fsstore.Store, log *slog.Logger, version string, opts HTTPOptions) (*HTTP, error) {
	h := &HTTP{store: store, log: log, version: version, origin: opts.Origin, wake: wake.New(), links: newLinks(store, log),
		servers: map[[32]byte]*Server{}, failures: map[string]*clientFailures{}, now: opts.Now}
	if h.now == nil {
		h.now = time.Now
	}
	h.config = New(store, log, version)
	cfg, err := h.config.loadConfig()
	if err != nil {
		return nil, err
	}
	sdkOpts := mcp.StreamableHTTPOptions{
		Logger:              log,
		SessionTimeout:      cfg.Defaults.SessionIdleTimeout.Duration,
		MaxRequestBodyBytes: MaxFrame,
		// An answer is a whole JSON body, not an event stream: a client
		// reads it to its end before it sees the result, so its connection
		// is back in its pool before its next call, which then proves the
		// answer was read (links.go). No tool sends anything else during a
		// call.
		JSONResponse: true,
	}
	stateful := mcp.NewStreamableHTTPHandler(h.serverOf, &sdkOpts)
	// Protocol 2026-07-28 is sessionless over HTTP: the SDK serves it only
	// in its stateless mode, each request an MCP session of its own, ended
	// (and its call cancelled) with the request. aipm's sessions are in
	// session_token, so nothing is lost by that.
	statelessOpts := sdkOpts
	statelessOpts.Stateless, statelessOpts.PropagateRequestCancellation = true, true
	stateless := mcp.NewStreamableHTTPHandler(h.serverOf, &statelessOpts)
	route := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= sessionlessProtocol {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
	h.handler = auth.RequireBearerToken(h.verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(route)
	store.ServeMany()
	store.WatchTasks(h.wake)
	return h, nil
}

// sessionlessProtocol is the first protocol revision the SDK serves only
// without MCP sessions over HTTP (SEP-2575).
const sessionlessProtocol = "2026-07-28"

// IdleTimeout is how long aipm serve --http keeps an idle keep-alive
// connection open (its http.Server's IdleTimeout). Every response says a
// little less (Keep-Alive: timeout=...), so that a client that would close
// an idle connection sooner (Node's fetch: after 4 seconds) keeps it:
// its next call on that connection proves it read the answer before
// (links.go), where a call on a new one takes the answer's batch back.
const IdleTimeout = 2 * time.Minute

// keepAlive is the Keep-Alive header of every response.
var keepAlive = fmt.Sprintf("timeout=%d", int((IdleTimeout - 5*time.Second).Seconds()))

// linkHeader carries, from the transport to the gate, which request in
// flight a call arrived in (links.go). A client's own value is replaced.
const linkHeader = "Aipm-Link"

func (h *HTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if o := r.Header.Get("Origin"); o != "" && o != h.origin {
		http.Error(w, fmt.Sprintf("requests from a web page (Origin %.100s) are refused: an MCP client sends no Origin header", o), http.StatusForbidden)
		return
	}
	client := clientAddr(r)
	if wait := h.backingOff(client); wait > 0 && !h.proven(r) {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		http.Error(w, fmt.Sprintf("too many requests with a wrong or missing bearer token from %s: try again in %s with the passkey aipm agent add printed", client, wait.Round(time.Second)), http.StatusTooManyRequests)
		return
	}
	if r.Header.Get("Authorization") == "" {
		h.failed(client)
		w.Header().Set("WWW-Authenticate", `Bearer realm="aipm"`)
		http.Error(w, "no bearer token: send Authorization: Bearer <the agent's passkey, as aipm agent add printed it>", http.StatusUnauthorized)
		return
	}
	w.Header().Set("Keep-Alive", keepAlive)
	rw := &linkWriter{ResponseWriter: w}
	l := h.links.add(r.Context(), connOf(r), rw.written.Load)
	rw.writing = func() { h.links.writing(l) }
	r.Header.Set(linkHeader, l.id)
	// Deferred, so that a handler's panic (recovered by net/http) leaves no
	// session waiting for this answer for ever.
	defer h.links.finish(l, func(hd handed) bool {
		// Whole: the answer went out after the batch was handed, and every
		// write and flush succeeded (the client's TCP stack has it; whether
		// the client read it, only its next request on this connection
		// tells: links.go). A client's context ends as soon as it has read
		// the answer, so the request's context says nothing here.
		return !rw.failed.Load() && rw.written.Load() > hd.mark
	})
	h.handler.ServeHTTP(rw, r)
}

// verify is the bearer token check (auth.RequireBearerToken): the agent
// whose passkey the token is. A failure is counted for the client.
func (h *HTTP) verify(_ context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
	cfg, err := h.config.loadConfig()
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err) // 500: not the client's fault
	}
	agent, err := h.store.AgentOfPasskey(cfg, token)
	if errors.Is(err, fsstore.ErrBadPasskey) {
		h.failed(clientAddr(r))
		if strings.HasPrefix(token, "$") {
			// A client config's ${AIPM_PASSKEY} sent as it stands: Claude
			// Code sends an unset variable's reference literally.
			return nil, fmt.Errorf("%w: the bearer token is the unexpanded text %.40q: set that variable to the agent's passkey in the environment the client starts in", auth.ErrInvalidToken, token)
		}
		return nil, fmt.Errorf("%w: the bearer token is no AI agent's passkey here: send Authorization: Bearer <the passkey aipm agent add printed>", auth.ErrInvalidToken)
	}
	if err != nil {
		return nil, err
	}
	key := sha256.Sum256([]byte(token))
	h.mu.Lock()
	proven := h.servers[key] != nil
	if !proven {
		h.servers[key] = h.agentServer(fsstore.Credential{Agent: agent, Passkey: token})
	}
	h.mu.Unlock()
	if !proven {
		// A right passkey ends its address's back-off, once: a passkey
		// already proven (which passes a back-off) does not end another
		// client's.
		h.succeeded(clientAddr(r))
	}
	return &auth.TokenInfo{UserID: agent, Extra: map[string]any{serverKey: key}}, nil
}

const serverKey = "aipm.server"

// agentServer is the Server of one agent's credential.
func (h *HTTP) agentServer(c Credential) *Server {
	s := New(h.store, h.log, h.version)
	s.wake, s.links, s.cred, s.locked = h.wake, h.links, &c, true
	s.purpose = ""  // AIPM_PURPOSE names no agent here
	s.mcp = s.MCP() // built once: getServer runs on every request
	return s
}

// serverOf is the SDK's getServer: the verified agent's Server, cached.
func (h *HTTP) serverOf(r *http.Request) *mcp.Server {
	ti := auth.TokenInfoFromContext(r.Context())
	if ti == nil {
		return nil
	}
	key, _ := ti.Extra[serverKey].([32]byte)
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.servers[key]; s != nil {
		return s.mcp
	}
	return nil
}

// Close ends the aipm sessions opened through h (reason process_exited)
// and stops following the task files.
func (h *HTTP) Close(ctx context.Context) {
	h.store.WatchTasks(nil)
	h.mu.Lock()
	servers := make([]*Server, 0, len(h.servers))
	for _, s := range h.servers {
		servers = append(servers, s)
	}
	h.mu.Unlock()
	for _, s := range servers {
		s.endOpened(ctx)
	}
}

// proven says whether r's bearer token is a passkey that already proved
// itself here (its agent's Server exists): a client in back-off is slowed
// in its guesses, but an agent whose passkey is known to be right is not
// locked out by another client's bad token from the same address (a
// loopback, a NAT). The token is still checked as any other.
func (h *HTTP) proven(r *http.Request) bool {
	fields := strings.Fields(r.Header.Get("Authorization")) // as the SDK's RequireBearerToken reads it
	if len(fields) != 2 || !strings.EqualFold(fields[0], "bearer") {
		return false
	}
	token := fields[1]
	key := sha256.Sum256([]byte(token))
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.servers[key] != nil
}

// clientAddr is the unit of the back-off: the client's IP address, an
// IPv6 one by its /64 (one host commonly holds a whole /64).
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.To4() != nil {
		return host
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// backingOff is how long client must wait before its next request counts.
func (h *HTTP) backingOff(client string) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.failures[client]
	if f == nil && len(h.failures) >= maxClients {
		h.forgetExpired() // as failed does, so that both agree
		if len(h.failures) >= maxClients {
			f = h.failures[overflowClients] // failed has counted it there
		}
	}
	if f == nil {
		return 0
	}
	return max(f.notBefore.Sub(h.now()), 0)
}

// failed counts a wrong or missing token from client, on the schedule of
// a wrong passkey.
func (h *HTTP) failed(client string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.failures[client]
	if f == nil {
		if len(h.failures) >= maxClients {
			h.forgetExpired()
		}
		if len(h.failures) >= maxClients {
			// Full of clients in back-off: the newcomers share one entry
			// (and so one back-off) rather than grow the table.
			client = overflowClients
			f = h.failures[client]
		}
	}
	if f == nil {
		f = &clientFailures{}
		h.failures[client] = f
	}
	f.n++
	f.notBefore = h.now().Add(fsstore.BackoffAfter(f.n))
}

// maxClients bounds the failure table; past it, entries whose back-off
// ended are forgotten, and new clients share overflowClients's entry.
const maxClients = 4096

const overflowClients = "(many clients)"

func (h *HTTP) forgetExpired() {
	now := h.now()
	for c, f := range h.failures {
		if !now.Before(f.notBefore) {
			delete(h.failures, c)
		}
	}
}

// succeeded forgets client's failures, as a right passkey does.
func (h *HTTP) succeeded(client string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.failures, client)
}

// ConnContext is the http.Server's ConnContext of aipm serve --http: it
// marks each connection, so that a request on the connection that carried
// an answer proves that answer was read (links.go).
func (h *HTTP) ConnContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, &linkConn{})
}

type connKey struct{}

// connOf is the connection r came on, if its answers and requests follow
// each other there: HTTP/1.x (an HTTP/2 connection multiplexes), marked by
// ConnContext.
func connOf(r *http.Request) *linkConn {
	if r.ProtoMajor != 1 {
		return nil
	}
	c, _ := r.Context().Value(connKey{}).(*linkConn)
	return c
}

// linkWriter remembers whether writing the response failed (the client
// went away while it was written).
type linkWriter struct {
	http.ResponseWriter
	failed  atomic.Bool
	written atomic.Int64 // bytes of the response body written
	writing func()       // before each write (links.writing)
}

func (w *linkWriter) Write(b []byte) (int, error) {
	if w.writing != nil {
		w.writing()
	}
	n, err := w.ResponseWriter.Write(b)
	w.written.Add(int64(n))
	if err != nil {
		w.failed.Store(true)
	}
	return n, err
}

func (w *linkWriter) WriteHeader(code int) {
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="aipm"`)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *linkWriter) Flush() {
	if err := http.NewResponseController(w.ResponseWriter).Flush(); err != nil {
		w.failed.Store(true)
	}
}

func (w *linkWriter) FlushError() error {
	err := http.NewResponseController(w.ResponseWriter).Flush()
	if err != nil {
		w.failed.Store(true)
	}
	return err
}

func (w *linkWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
