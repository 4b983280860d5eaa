package mcpserver

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
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
// What is refused, in order (admit, http_limits.go): a request whose
// Origin header is not the server's own (403: a web page; CLIs send
// none), a missing or wrong token (401, WWW-Authenticate: Bearer; 429
// with Retry-After from a client address in back-off, counted per address
// that names someone on fsstore.BackoffAfter's schedule), answered only
// after a delay and with the connection closed, so that a guess costs its
// sender, never an agent: a right passkey is never refused for another's
// guesses. Then what passes one agent's bounds (HTTPLimits: 413, 429),
// and then what the SDK refuses: a Host that is not loopback on a loopback
// listener (DNS rebinding), an MCP session of another agent (403). Before
// all of it, HTTP.Server and HTTP.Listener bound time and connections
// (connTable).
type HTTP struct {
	store   *fsstore.Store
	log     *slog.Logger
	version string
	origin  string
	wake    *wake.Hub
	links   *links
	config  *Server // reads the config for the token check (no tools)
	handler http.Handler

	limits      HTTPLimits
	conns       *connTable
	sessionIdle time.Duration // the config's session idle timeout, when h was made

	mu       sync.Mutex
	servers  map[[32]byte]*Server       // by the SHA-256 of the bearer token
	failures map[string]*clientFailures // by client address that names someone
	loads    map[string]*agentLoad      // by agent
	now      func() time.Time
}

// HTTPOptions configure NewHTTP.
type HTTPOptions struct {
	// Origin is the server's own origin (scheme://host:port), the one
	// Origin header a request may carry.
	Origin string
	// Now is the clock of the back-off per client address (nil:
	// time.Now); tests set it.
	Now func() time.Time
	// Limits bound clients and agents (zero fields: DefaultHTTPLimits).
	Limits HTTPLimits
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
		servers: map[[32]byte]*Server{}, failures: map[string]*clientFailures{}, loads: map[string]*agentLoad{}, now: opts.Now,
		limits: opts.Limits.orDefaults()}
	h.conns = newConnTable(h.limits, log)
	if h.now == nil {
		h.now = time.Now
	}
	h.config = New(store, log, version)
	cfg, err := h.config.loadConfig()
	if err != nil {
		return nil, err
	}
	h.sessionIdle = cfg.Defaults.SessionIdleTimeout.Duration
	sdkOpts := mcp.StreamableHTTPOptions{
		Logger:              log,
		SessionTimeout:      h.sessionIdle,
		MaxRequestBodyBytes: h.limits.MaxBody,
		// An answer is a whole JSON body, not an event stream: links
		// knows when it is out (links.go, rule 2). No tool sends anything
		// else during a call.
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
// an idle connection sooner (Node's fetch: after 4 seconds) keeps it and
// saves a handshake per call. Which connection a call comes on proves
// nothing of an answer (links.go, rule 3).
const IdleTimeout = 2 * time.Minute

// keepAlive is the Keep-Alive header of every response.
var keepAlive = fmt.Sprintf("timeout=%d", int((IdleTimeout - 5*time.Second).Seconds()))

// linkHeader carries, from the transport to the gate, which request in
// flight a call arrived in (links.go). A client's own value is replaced.
const linkHeader = "Aipm-Link"

func (h *HTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r, release, ok := h.admit(w, r)
	if !ok {
		return
	}
	defer release()
	w.Header().Set("Keep-Alive", keepAlive)
	rw := &linkWriter{ResponseWriter: w, links: h.links, link: h.links.addWithin(r.Context())}
	r.Header.Set(linkHeader, rw.link.id)
	// Deferred, so that a handler's panic (recovered by net/http) leaves no
	// session waiting for this answer for ever.
	defer h.links.finish(rw.link)
	h.handler.ServeHTTP(rw, r)
}

// verify is the SDK's bearer token check (auth.RequireBearerToken), which
// puts the agent in the request's context for the SDK: admit checked the
// token already and left its answer in the context.
func (h *HTTP) verify(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
	if ti, ok := ctx.Value(tokenInfoKey{}).(*auth.TokenInfo); ok {
		return ti, nil
	}
	return nil, fmt.Errorf("%w: the request was not admitted", auth.ErrInvalidToken)
}

const serverKey = "aipm.server"

// serverKeyOf is the key of token's Server in h.servers.
func serverKeyOf(token string) [32]byte { return sha256.Sum256([]byte(token)) }

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

// failed counts a wrong or missing token from client (an address that
// names someone; "" counts nothing), on the schedule of a wrong passkey:
// inWait is what was left then of the wait its failures before had
// started (0: none, the token is answered 401), and next is the wait this
// one starts. Failures in a row start over after a quiet spell as long as
// the longest wait.
func (h *HTTP) failed(client string) (inWait, next time.Duration) {
	if client == "" {
		return 0, 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
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
	if now.Sub(f.notBefore) > longestWait {
		f.n = 0
	}
	inWait = max(f.notBefore.Sub(now), 0)
	f.n++
	f.notBefore = now.Add(fsstore.BackoffAfter(f.n))
	return inWait, f.notBefore.Sub(now)
}

// longestWait is fsstore.BackoffAfter's cap.
var longestWait = fsstore.BackoffAfter(1 << 20)

// maxClients bounds the failure table; past it, entries quiet for as long
// as the longest wait are forgotten, and new clients share
// overflowClients's entry.
const maxClients = 4096

const overflowClients = "(many clients)"

func (h *HTTP) forgetExpired() {
	now := h.now()
	for c, f := range h.failures {
		if now.Sub(f.notBefore) > longestWait {
			delete(h.failures, c)
		}
	}
}

// ConnContext is the http.Server's ConnContext of aipm serve --http: it
// marks each connection for admit to count it as its agent's (connTable).
// A connection's order proves nothing of what a client read (links.go):
// links do not look at it.
func (h *HTTP) ConnContext(ctx context.Context, c net.Conn) context.Context {
	if tc := trackedOf(c); tc != nil {
		ctx = context.WithValue(ctx, trackedKey{}, tc)
	}
	return ctx
}

// linkWriter writes the response of one request, its link, through links,
// which records what of it went out (links.write, links.writeFailed).
type linkWriter struct {
	http.ResponseWriter
	links *links
	link  *link
}

func (w *linkWriter) Write(b []byte) (int, error) {
	return w.links.write(w.link, func() (int, error) { return w.ResponseWriter.Write(b) })
}

func (w *linkWriter) WriteHeader(code int) {
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="aipm"`)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *linkWriter) Flush() {
	if err := http.NewResponseController(w.ResponseWriter).Flush(); err != nil {
		w.links.writeFailed(w.link)
	}
}

func (w *linkWriter) FlushError() error {
	err := http.NewResponseController(w.ResponseWriter).Flush()
	if err != nil {
		w.links.writeFailed(w.link)
	}
	return err
}

func (w *linkWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
