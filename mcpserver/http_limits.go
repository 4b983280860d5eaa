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
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"aipm/fsstore"
)

// HTTPLimits bound what one client address, and one agent, can take of a
// shared aipm serve --http (DESIGN section 14), so that no stranger and no
// agent can exhaust it for the others. Before authentication: time to send
// a request's headers and its body, an idle connection's life, and the
// connections one client address holds. After it, per agent: the request
// body, the calls in flight and the MCP sessions. A zero field takes its
// default (DefaultHTTPLimits); docs/remote.md lists them.
type HTTPLimits struct {
	HeaderTimeout    time.Duration // to send a request's headers (and a TLS handshake)
	BodyTimeout      time.Duration // to send a request's body, from the end of its headers
	IdleTimeout      time.Duration // a keep-alive connection between requests
	ConnsPerClient   int           // connections open at once from one client address (an IPv6 one by its /64)
	MaxBody          int64         // bytes of one request's body
	CallsPerAgent    int           // requests with a body (POST) in flight at once for one agent
	SessionsPerAgent int           // MCP sessions one agent holds open
}

// MaxToolCall is the default bound on a request body: the largest call a
// tool accepts is request_task's, a 200-character title and a 20,000-
// character description (fsstore.TextLimits), under 250,000 bytes even
// with every character a JSON-escaped surrogate pair (12 bytes); the rest
// of any call is ids and a few words.
const MaxToolCall = 512 << 10

// DefaultHTTPLimits are the limits of aipm serve --http.
var DefaultHTTPLimits = HTTPLimits{
	HeaderTimeout:    10 * time.Second,
	BodyTimeout:      30 * time.Second,
	IdleTimeout:      IdleTimeout,
	ConnsPerClient:   128,
	MaxBody:          MaxToolCall,
	CallsPerAgent:    16,
	SessionsPerAgent: 32,
}

// maxHeaderBytes bounds a request's headers (a bearer token and a few
// short fields); net/http's default is 1 MiB per connection.
const maxHeaderBytes = 64 << 10

// orDefaults is l with each zero field set to its default.
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
	if l.ConnsPerClient <= 0 {
		l.ConnsPerClient = d.ConnsPerClient
	}
	if l.MaxBody <= 0 {
		l.MaxBody = d.MaxBody
	}
	if l.CallsPerAgent <= 0 {
		l.CallsPerAgent = d.CallsPerAgent
	}
	if l.SessionsPerAgent <= 0 {
		l.SessionsPerAgent = d.SessionsPerAgent
	}
	return l
}

// Server is the http.Server for handler (h, at its path), with h's
// timeouts. No read timeout for a whole request and no write timeout: a
// waiting get_next_action answers after minutes; a request's body has its
// own deadline (admit).
func (h *HTTP) Server(handler http.Handler) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: h.limits.HeaderTimeout,
		IdleTimeout:       h.limits.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(h.log.Handler(), slog.LevelWarn),
	}
}

// Listener is ln holding at most ConnsPerClient connections from one
// client address: a connection past it is closed as soon as it is
// accepted, before a byte is read. Wrap the TCP listener (TLS goes on top).
func (h *HTTP) Listener(ln net.Listener) net.Listener {
	return &clientConns{Listener: ln, max: h.limits.ConnsPerClient, log: h.log, open: map[string]int{}}
}

// clientConns counts the open connections of each client address.
type clientConns struct {
	net.Listener
	max int
	log *slog.Logger

	mu       sync.Mutex
	open     map[string]int
	warnedAt time.Time
}

func (l *clientConns) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		client := clientKey(c.RemoteAddr().String())
		l.mu.Lock()
		full := l.open[client] >= l.max
		if !full {
			l.open[client]++
		}
		warn := full && time.Since(l.warnedAt) > time.Minute
		if warn {
			l.warnedAt = time.Now()
		}
		l.mu.Unlock()
		if !full {
			return &clientConn{Conn: c, l: l, client: client}, nil
		}
		c.Close()
		if warn {
			l.log.Warn("connections refused: a client address holds the most connections it may (said once a minute)", "client", client, "max", l.max)
		}
	}
}

// clientConn gives its client's count back when it closes.
type clientConn struct {
	net.Conn
	l      *clientConns
	client string
	once   sync.Once
}

func (c *clientConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		if c.l.open[c.client]--; c.l.open[c.client] <= 0 {
			delete(c.l.open, c.client)
		}
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

// CloseWrite keeps net/http's half-close of a TCP connection.
func (c *clientConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// clientKey is the unit of the per-address bounds: the IP address of
// addr (host:port), an IPv6 one by its /64 (one host commonly holds a
// whole /64).
func clientKey(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.To4() != nil {
		return host
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// agentLoad is what one agent holds of the server now.
type agentLoad struct {
	calls   int // requests with a body in flight
	opening int // requests in flight that may open an MCP session
}

type tokenInfoKey struct{}

// admit is everything a request passes before the SDK's handler sees it,
// cheapest first: its body's deadline; the Origin; the client address's
// back-off; the bearer token (fsstore.AgentOfPasskey, slowed per agent);
// then the agent's bounds: the body's size, its calls in flight and, for a
// request that may open an MCP session, its sessions. A refusal is
// answered here, with Connection: close (an unread body is not waited
// for), and ok is false. Otherwise release must run when the request is
// over.
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
	client := clientAddr(r)
	if wait := h.backingOff(client); wait > 0 && !h.proven(r) {
		w.Header().Set("Retry-After", retryAfter(wait))
		return refuse(http.StatusTooManyRequests, fmt.Sprintf("too many requests with a wrong or missing bearer token from %s: try again in %s with the passkey aipm agent add printed", client, wait.Round(time.Second)))
	}
	token, found := bearerToken(r)
	if !found {
		h.failed(client)
		return refuse(http.StatusUnauthorized, "no bearer token: send Authorization: Bearer <the agent's passkey, as aipm agent add printed it>")
	}
	agent, key, err := h.check(r.Context(), token, client)
	var wait *fsstore.BackoffError
	switch {
	case errors.As(err, &wait):
		d := max(wait.Until.Sub(wait.Now), time.Second)
		w.Header().Set("Retry-After", retryAfter(d))
		return refuse(http.StatusTooManyRequests, fmt.Sprintf("too many wrong bearer tokens were tried on this project's agents: try again in %s with the passkey aipm agent add printed", d.Round(time.Second)))
	case errors.Is(err, fsstore.ErrBadPasskey):
		if strings.HasPrefix(token, "$") {
			// A client config's ${AIPM_PASSKEY} sent as it stands: Claude
			// Code sends an unset variable's reference literally.
			return refuse(http.StatusUnauthorized, fmt.Sprintf("the bearer token is the unexpanded text %.40q: set that variable to the agent's passkey in the environment the client starts in", token))
		}
		return refuse(http.StatusUnauthorized, "the bearer token is no AI agent's passkey here: send Authorization: Bearer <the passkey aipm agent add printed>")
	case err != nil:
		h.log.Error("check a bearer token", "err", err)
		return refuse(http.StatusInternalServerError, fmt.Sprintf("the bearer token could not be checked: %v", err)) // not the client's fault
	}
	lim := h.limits
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
// the key of its Server (made the first time). A token compared and
// found wrong is counted for client too.
func (h *HTTP) check(ctx context.Context, token, client string) (string, [32]byte, error) {
	var key [32]byte
	cfg, err := h.config.loadConfig()
	if err != nil {
		return "", key, fmt.Errorf("read config: %w", err)
	}
	agent, err := h.store.AgentOfPasskey(ctx, cfg, token)
	if errors.Is(err, fsstore.ErrBadPasskey) {
		h.failed(client)
	}
	if err != nil {
		return "", key, err
	}
	key = serverKeyOf(token)
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
		h.succeeded(client)
	}
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
