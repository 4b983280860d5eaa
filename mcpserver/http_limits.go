package mcpserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"aipm/fsstore"
)

// HTTPLimits bound what a shared aipm serve --http gives, and to whom
// (DESIGN section 14), so that no stranger and no agent can exhaust it for
// the others, and agents on one host (one loopback address) never lock
// each other out. Before authentication: time to send a request's headers
// and its body, an idle connection's life, the unauthenticated connections
// open at once in all and, of those, from one client address where an
// address names someone (not loopback), and what a missing or wrong token
// costs its sender. After it, per agent: the request body, the calls in
// flight, the MCP sessions and the connections. A zero field takes its
// default (DefaultHTTPLimits); docs/remote.md lists them.
type HTTPLimits struct {
	HeaderTimeout time.Duration // to send a request's headers (and a TLS handshake)
	BodyTimeout   time.Duration // to send a request's body, from the end of its headers
	IdleTimeout   time.Duration // a keep-alive connection between requests
	// Unauthenticated bounds the connections open at once on which no
	// request has carried a valid bearer token yet, in all; it is at most
	// half the process's descriptor limit. Past it the one that has sent
	// least is cut (connTable).
	Unauthenticated int
	// ConnsPerClient bounds those of them from one client address that
	// names someone: not a loopback address (every local agent has that
	// one), an IPv6 one by its /64.
	ConnsPerClient int
	// GuessDelay is how long the answer to a missing or wrong token waits
	// (its connection is closed after it); longer, up to ten times, from a
	// client address in back-off.
	GuessDelay       time.Duration
	MaxBody          int64 // bytes of one request's body
	CallsPerAgent    int   // requests with a body (POST) in flight at once for one agent
	SessionsPerAgent int   // MCP sessions one agent holds open
	// ConnsPerAgent bounds the connections whose latest request carried
	// one agent's passkey. Past it the agent's longest idle one is cut.
	ConnsPerAgent int
}

// MaxToolCall is the default bound on a request body: the largest call a
// tool accepts is request_task's, a 200-character title and a 20,000-
// character description (fsstore.TextLimits), under 250,000 bytes even
// with every character a JSON-escaped surrogate pair (12 bytes); the rest
// of any call is ids and a few words.
const MaxToolCall = 512 << 10

// DefaultHTTPLimits are the limits of aipm serve --http. An agent's
// connections outnumber what it can use at once (its calls in flight and
// one event stream per MCP session), so that past the bound one of them is
// idle to be cut.
var DefaultHTTPLimits = HTTPLimits{
	HeaderTimeout:    10 * time.Second,
	BodyTimeout:      30 * time.Second,
	IdleTimeout:      IdleTimeout,
	Unauthenticated:  1024,
	ConnsPerClient:   128,
	GuessDelay:       time.Second,
	MaxBody:          MaxToolCall,
	CallsPerAgent:    16,
	SessionsPerAgent: 32,
	ConnsPerAgent:    64,
}

// maxHeaderBytes bounds a request's headers (a bearer token and a few
// short fields); net/http's default is 1 MiB per connection.
const maxHeaderBytes = 64 << 10

// orDefaults is l with each zero field set to its default, and the
// unauthenticated connections at most half the descriptors this process
// may open (the rest for the agents' connections and the store's files).
func (l HTTPLimits) orDefaults() HTTPLimits {
	d := DefaultHTTPLimits
	pick := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	pick(&l.HeaderTimeout, d.HeaderTimeout)
	pick(&l.BodyTimeout, d.BodyTimeout)
	pick(&l.IdleTimeout, d.IdleTimeout)
	pick(&l.GuessDelay, d.GuessDelay)
	count := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	count(&l.Unauthenticated, d.Unauthenticated)
	count(&l.ConnsPerClient, d.ConnsPerClient)
	count(&l.CallsPerAgent, d.CallsPerAgent)
	count(&l.SessionsPerAgent, d.SessionsPerAgent)
	count(&l.ConnsPerAgent, d.ConnsPerAgent)
	if l.MaxBody <= 0 {
		l.MaxBody = d.MaxBody
	}
	var fds syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &fds); err == nil && fds.Cur > 0 && fds.Cur < uint64(2*l.Unauthenticated) {
		l.Unauthenticated = max(int(fds.Cur/2), 1)
	}
	return l
}

// Server is the http.Server for handler (h, at its path), with h's
// timeouts, its connections marked (ConnContext) and followed (for the
// bounds of connTable: serve it on h.Listener). No read timeout for a
// whole request and no write timeout: a waiting get_next_action answers
// after minutes; a request's body has its own deadline (admit).
func (h *HTTP) Server(handler http.Handler) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: h.limits.HeaderTimeout,
		IdleTimeout:       h.limits.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(h.log.Handler(), slog.LevelWarn),
		ConnContext:       h.ConnContext,
		ConnState:         h.conns.stateChanged,
	}
}

// Listener is ln with its connections counted and bounded (connTable):
// wrap the TCP listener (TLS goes on top), and serve it with h.Server.
func (h *HTTP) Listener(ln net.Listener) net.Listener {
	return &boundedListener{Listener: ln, conns: h.conns}
}

// agentLoad is what one agent holds of the server now.
type agentLoad struct {
	calls   int // requests with a body in flight
	opening int // requests in flight that may open an MCP session
}

type tokenInfoKey struct{}

// admit is everything a request passes before the SDK's handler sees it,
// cheapest first: its body's deadline; the Origin; the bearer token
// (fsstore.AgentOfPasskey), a missing or wrong one answered by guessed;
// its connection counted as the agent's (connTable); then the agent's
// bounds: the body's size, its calls in flight and, for a request that
// may open an MCP session, its sessions. A refusal is answered here, with
// Connection: close (an unread body is not waited for), and ok is false.
// Otherwise release must run when the request is over.
func (h *HTTP) admit(w http.ResponseWriter, r *http.Request) (_ *http.Request, release func(), ok bool) {
	refuse := func(code int, msg string) (*http.Request, func(), bool) {
		// The answer goes out, then the connection is closed at once:
		// net/http would otherwise wait for the rest of the body.
		w.Header().Set("Connection", "close")
		http.NewResponseController(w).SetReadDeadline(time.Now())
		if code == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="aipm"`)
		}
		http.Error(w, msg, code)
		return r, nil, false
	}
	if r.Body != nil && r.Body != http.NoBody {
		// The body must arrive within BodyTimeout. Once it was read to its
		// end net/http clears the deadline, as it starts watching for the
		// client to go away: a waiting call is not cut.
		http.NewResponseController(w).SetReadDeadline(time.Now().Add(h.limits.BodyTimeout))
	}
	if o := r.Header.Get("Origin"); o != "" && o != h.origin {
		return refuse(http.StatusForbidden, fmt.Sprintf("requests from a web page (Origin %.100s) are refused: an MCP client sends no Origin header", o))
	}
	token, found := bearerToken(r)
	if !found {
		return h.guessed(w, r, refuse, "no bearer token: send Authorization: Bearer <the agent's passkey, as aipm agent add printed it>")
	}
	agent, key, err := h.check(r.Context(), token)
	switch {
	case errors.Is(err, fsstore.ErrBadPasskey) && strings.HasPrefix(token, "$"):
		// A client config's ${AIPM_PASSKEY} sent as it stands: Claude
		// Code sends an unset variable's reference literally.
		return h.guessed(w, r, refuse, fmt.Sprintf("the bearer token is the unexpanded text %.40q: set that variable to the agent's passkey in the environment the client starts in", token))
	case errors.Is(err, fsstore.ErrBadPasskey):
		return h.guessed(w, r, refuse, "the bearer token is no AI agent's passkey here: send Authorization: Bearer <the passkey aipm agent add printed>")
	case err != nil:
		h.log.Error("check a bearer token", "err", err)
		return refuse(http.StatusInternalServerError, fmt.Sprintf("the bearer token could not be checked: %v", err)) // not the client's fault
	}
	lim := h.limits
	if c := trackedConnOf(r.Context()); c != nil && !h.conns.authenticated(c, agent) {
		w.Header().Set("Retry-After", "1")
		return refuse(http.StatusTooManyRequests, fmt.Sprintf("%s has %d connections open on this server, the most one agent may have, and every one is in use: wait for a call to answer, then call again", agent, lim.ConnsPerAgent))
	}
	if r.ContentLength > lim.MaxBody {
		return refuse(http.StatusRequestEntityTooLarge, tooLarge(r.ContentLength, lim.MaxBody))
	}
	release, refusal := h.hold(agent, r)
	if refusal != "" {
		w.Header().Set("Retry-After", "1")
		return refuse(http.StatusTooManyRequests, refusal)
	}
	if r.ContentLength < 0 { // chunked: its size is known once read
		data, err := io.ReadAll(io.LimitReader(r.Body, lim.MaxBody+1))
		switch {
		case err != nil:
			release()
			return refuse(http.StatusBadRequest, fmt.Sprintf("the request body could not be read within %s: %v; send it again", lim.BodyTimeout, err))
		case int64(len(data)) > lim.MaxBody:
			release()
			return refuse(http.StatusRequestEntityTooLarge, tooLarge(-1, lim.MaxBody))
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(data)), int64(len(data))
	}
	ti := &auth.TokenInfo{UserID: agent, Extra: map[string]any{serverKey: key}}
	return r.WithContext(context.WithValue(r.Context(), tokenInfoKey{}, ti)), release, true
}

// guessed answers a missing or wrong token, at the guesser's cost, not
// the agents': it is counted for its client address (if that names
// someone), its connection becomes the first to cut (connTable), and the
// answer waits GuessDelay, then goes out with the connection closed: 401
// saying what to send, or, from an address whose failures in a row have
// started a wait that is not over, 429 with Retry-After, after that wait
// (at least GuessDelay, at most ten times it).
func (h *HTTP) guessed(w http.ResponseWriter, r *http.Request, refuse func(int, string) (*http.Request, func(), bool), msg string) (*http.Request, func(), bool) {
	client := h.conns.clientOf(r.RemoteAddr)
	inWait, next := h.failed(client)
	c := trackedConnOf(r.Context())
	if c != nil {
		h.conns.refused(c)
	}
	delay := h.limits.GuessDelay
	if inWait > 0 {
		delay = min(max(next, delay), 10*delay)
	}
	waitOrCut(r.Context(), c, delay)
	if inWait > 0 {
		w.Header().Set("Retry-After", retryAfter(next))
		return refuse(http.StatusTooManyRequests, fmt.Sprintf("too many requests with a wrong or missing bearer token from %s: try again in %s with the passkey aipm agent add printed", client, next.Round(time.Second)))
	}
	return refuse(http.StatusUnauthorized, msg)
}

func retryAfter(d time.Duration) string { return strconv.Itoa(int(math.Ceil(d.Seconds()))) }

func tooLarge(size, limit int64) string {
	of := "more than"
	if size >= 0 {
		of = fmt.Sprintf("%d bytes,", size)
	}
	return fmt.Sprintf("the request body has %s over the %d bytes one request may carry here (a tool's largest call is far smaller): send shorter text, or put it in a file of the project and name the file", of, limit)
}

// bearerToken is r's bearer token, read as the SDK's RequireBearerToken
// reads it.
func bearerToken(r *http.Request) (string, bool) {
	fields := strings.Fields(r.Header.Get("Authorization"))
	if len(fields) != 2 || !strings.EqualFold(fields[0], "bearer") {
		return "", false
	}
	return fields[1], true
}

// check is the bearer token check: the agent whose passkey token is, and
// the key of its Server (made the first time).
func (h *HTTP) check(ctx context.Context, token string) (string, [32]byte, error) {
	var key [32]byte
	cfg, err := h.config.loadConfig()
	if err != nil {
		return "", key, fmt.Errorf("read config: %w", err)
	}
	agent, err := h.store.AgentOfPasskey(ctx, cfg, token)
	if err != nil {
		return "", key, err
	}
	key = serverKeyOf(token)
	h.mu.Lock()
	if h.servers[key] == nil {
		h.servers[key] = h.agentServer(fsstore.Credential{Agent: agent, Passkey: token})
	}
	h.mu.Unlock()
	return agent, key, nil
}

// hold counts r against agent's bounds: a request with a body is a call
// in flight; one that may open an MCP session (a POST without
// Mcp-Session-Id, below the sessionless protocol) needs room for it. The
// refusal says which bound was hit and what to do; else release gives
// back what was held.
func (h *HTTP) hold(agent string, r *http.Request) (release func(), refusal string) {
	call := r.Method == http.MethodPost
	opens := call && r.Header.Get("Mcp-Session-Id") == "" && r.Header.Get("Mcp-Protocol-Version") < sessionlessProtocol
	if !call {
		return func() {}, ""
	}
	lim := h.limits
	h.mu.Lock()
	defer h.mu.Unlock()
	load := h.loads[agent]
	if load == nil {
		load = &agentLoad{}
		h.loads[agent] = load
	}
	if load.calls >= lim.CallsPerAgent {
		return nil, fmt.Sprintf("%s has %d calls in flight on this server, the most one agent may have: wait for one to answer (a get_next_action that waits counts), then call again", agent, load.calls)
	}
	if opens {
		if n := h.sessionsOf(agent) + load.opening; n >= lim.SessionsPerAgent {
			return nil, fmt.Sprintf("%s has %d MCP sessions open on this server, the most one agent may have: close the MCP clients it no longer uses (a client's DELETE ends its session; an idle one ends after %s), then connect again", agent, n, h.sessionIdle)
		}
		load.opening++
	}
	load.calls++
	return sync.OnceFunc(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		load.calls--
		if opens {
			load.opening--
		}
		if load.calls == 0 && load.opening == 0 {
			delete(h.loads, agent)
		}
	}), ""
}

// sessionsOf counts agent's MCP sessions (h.mu held).
func (h *HTTP) sessionsOf(agent string) int {
	n := 0
	for _, s := range h.servers {
		if s.cred.Agent != agent {
			continue
		}
		for range s.mcp.Sessions() {
			n++
		}
	}
	return n
}
