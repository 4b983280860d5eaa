package mcpserver

import (
	"container/list"
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// connTable counts the connections of a shared aipm serve --http by whom
// they name, and cuts one when a bound is reached (DESIGN section 14).
//
// A connection is unauthenticated until a request on it carries a valid
// bearer token (admit calls authenticated); from then on it is its
// agent's, the agent of its latest such request (a proxy's pooled
// connection carries several agents' requests in turn).
//
// Unauthenticated connections name no one: they are bounded in all
// (HTTPLimits.Unauthenticated) and, where the client address names someone
// (not loopback: every agent on this host shares that one), per address
// (ConnsPerClient). When a new connection would pass a bound, an older one
// of the same count is cut rather than the newcomer refused, the one that
// has shown least first: one whose token was refused and that is closing
// anyway, then one that is between requests none of which was an agent's
// (a 404), then the one longest still sending its first request's headers,
// then the one whose request waits longest for its token check. A client
// that sends its request promptly is so through before it can be the
// oldest: a crowd that holds connections open, or opens them as fast as
// they are cut, cuts its own.
//
// An agent's connections are bounded per agent (ConnsPerAgent); past it
// the agent's longest idle connection is cut. An agent needs fewer at once
// than the bound (calls in flight, one event stream per MCP session), so
// one is idle.
type connTable struct {
	lim HTTPLimits
	log *slog.Logger
	// namesSomeone says whether a client address is someone's own, and so
	// bounded by itself (not a loopback address).
	namesSomeone func(net.IP) bool

	mu       sync.Mutex
	unauth   connQueue             // every unauthenticated connection
	byClient map[string]*connQueue // those from each address that names someone
	byAgent  map[string]*agentConns
	warnedAt map[string]time.Time // by bound: when a cut was last logged
}

func newConnTable(lim HTTPLimits, log *slog.Logger) *connTable {
	return &connTable{lim: lim, log: log, namesSomeone: func(ip net.IP) bool { return !ip.IsLoopback() },
		byClient: map[string]*connQueue{}, byAgent: map[string]*agentConns{}, warnedAt: map[string]time.Time{}}
}

// connClass is what an unauthenticated connection has shown: the lower,
// the sooner it is cut.
type connClass uint8

const (
	classRefused connClass = iota // its token was refused: its answer waits, then it closes
	classIdle                     // between requests, none of which carried a valid token
	classHeaders                  // sending its first request's headers (or its TLS handshake)
	classRequest                  // a request read, its token not yet checked
	classCount
)

// connQueue is a set of unauthenticated connections by class, each class
// oldest first.
type connQueue struct {
	lists [classCount]list.List
	n     int
}

func (q *connQueue) push(c *trackedConn) *list.Element {
	q.n++
	return q.lists[c.class].PushBack(c)
}

func (q *connQueue) remove(c *trackedConn, e *list.Element) {
	q.lists[c.class].Remove(e)
	q.n--
}

// victim is the connection of q to cut first.
func (q *connQueue) victim() *trackedConn {
	for i := range q.lists {
		if e := q.lists[i].Front(); e != nil {
			return e.Value.(*trackedConn)
		}
	}
	return nil
}

// agentConns are one agent's connections.
type agentConns struct {
	n    int
	idle list.List // those between requests, longest idle first
}

// trackedConn is a connection of a connTable.
type trackedConn struct {
	net.Conn
	t      *connTable
	client string        // its client address, if that names someone
	done   chan struct{} // closed once it is counted no more (closed or cut)

	// Under t.mu:
	class           connClass
	agent           string        // its agent ("": unauthenticated)
	inAll, inClient *list.Element // its places among the unauthenticated
	idle            *list.Element // its place among its agent's idle connections
	gone            bool
}

func (c *trackedConn) Close() error {
	c.t.mu.Lock()
	c.t.drop(c)
	c.t.mu.Unlock()
	return c.Conn.Close()
}

// CloseWrite keeps net/http's half-close of a TCP connection.
func (c *trackedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// boundedListener hands out its connections through a connTable.
type boundedListener struct {
	net.Listener
	conns *connTable
}

func (l *boundedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.conns.accept(c), nil
}

// accept counts c as unauthenticated, cutting what it would pass.
func (t *connTable) accept(c net.Conn) *trackedConn {
	tc := &trackedConn{Conn: c, t: t, client: t.clientOf(c.RemoteAddr().String()), done: make(chan struct{}), class: classHeaders}
	var cut []*trackedConn
	t.mu.Lock()
	if tc.client != "" {
		if q := t.byClient[tc.client]; q != nil && q.n >= t.lim.ConnsPerClient {
			cut = append(cut, t.cutFrom(q, "client address"))
		}
	}
	if t.unauth.n >= t.lim.Unauthenticated {
		cut = append(cut, t.cutFrom(&t.unauth, "in all"))
	}
	tc.inAll = t.unauth.push(tc)
	if tc.client != "" {
		q := t.byClient[tc.client]
		if q == nil {
			q = &connQueue{}
			t.byClient[tc.client] = q
		}
		tc.inClient = q.push(tc)
	}
	t.mu.Unlock()
	for _, v := range cut {
		v.Conn.Close()
	}
	return tc
}

// cutFrom drops q's victim, to be closed once t.mu is released, and says
// so in the log once a minute for each bound (t.mu held).
func (t *connTable) cutFrom(q *connQueue, bound string) *trackedConn {
	v := q.victim()
	t.drop(v)
	if now := time.Now(); now.Sub(t.warnedAt[bound]) > time.Minute {
		t.warnedAt[bound] = now
		limit := t.lim.Unauthenticated
		if bound == "client address" {
			limit = t.lim.ConnsPerClient
		}
		t.log.Warn("unauthenticated connections are cut, the oldest first: as many are open as may be (said once a minute)",
			"bound", bound, "max", limit, "client", v.RemoteAddr().String())
	}
	return v
}

// drop counts c no more (t.mu held).
func (t *connTable) drop(c *trackedConn) {
	if c.gone {
		return
	}
	c.gone = true
	close(c.done)
	if c.agent != "" {
		t.leaveAgent(c)
		return
	}
	t.leaveUnauthenticated(c)
}

// leaveAgent counts c no more among its agent's connections (t.mu held).
func (t *connTable) leaveAgent(c *trackedConn) {
	a := t.byAgent[c.agent]
	if c.idle != nil {
		a.idle.Remove(c.idle)
		c.idle = nil
	}
	if a.n--; a.n == 0 {
		delete(t.byAgent, c.agent)
	}
}

// leaveUnauthenticated counts c no more among the unauthenticated
// connections, in all and of its client address (t.mu held).
func (t *connTable) leaveUnauthenticated(c *trackedConn) {
	t.unauth.remove(c, c.inAll)
	if c.inClient != nil {
		q := t.byClient[c.client]
		q.remove(c, c.inClient)
		if q.n == 0 {
			delete(t.byClient, c.client)
		}
	}
}

// reclass moves an unauthenticated c to class (t.mu held).
func (t *connTable) reclass(c *trackedConn, class connClass) {
	if c.gone || c.agent != "" || c.class == class {
		return
	}
	t.unauth.remove(c, c.inAll)
	var q *connQueue
	if c.inClient != nil {
		q = t.byClient[c.client]
		q.remove(c, c.inClient)
	}
	c.class = class
	c.inAll = t.unauth.push(c)
	if q != nil {
		c.inClient = q.push(c)
	}
}

// stateChanged is the http.Server's ConnState: it follows which
// connections are between requests.
func (t *connTable) stateChanged(nc net.Conn, state http.ConnState) {
	c := trackedOf(nc)
	if c == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case c.gone:
	case state == http.StateActive && c.agent != "":
		if c.idle != nil {
			t.byAgent[c.agent].idle.Remove(c.idle)
			c.idle = nil
		}
	case state == http.StateActive:
		t.reclass(c, classRequest)
	case state == http.StateIdle && c.agent != "":
		if c.idle == nil {
			c.idle = t.byAgent[c.agent].idle.PushBack(c)
		}
	case state == http.StateIdle:
		t.reclass(c, classIdle)
	case state == http.StateHijacked || state == http.StateClosed:
		t.drop(c)
	}
}

// refused marks c as answering a refused token: the first to cut.
func (t *connTable) refused(c *trackedConn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reclass(c, classRefused)
}

// authenticated makes c agent's, whose passkey a request on it carried,
// cutting agent's longest idle connection if it holds as many as it may;
// false when it holds that many and none is idle (the request is refused).
func (t *connTable) authenticated(c *trackedConn, agent string) bool {
	t.mu.Lock()
	if c.gone || c.agent == agent {
		t.mu.Unlock()
		return true
	}
	a := t.byAgent[agent]
	if a == nil {
		a = &agentConns{}
		t.byAgent[agent] = a
	}
	var cut *trackedConn
	if a.n >= t.lim.ConnsPerAgent {
		e := a.idle.Front()
		if e == nil {
			t.mu.Unlock()
			return false
		}
		cut = e.Value.(*trackedConn)
		t.drop(cut)
	}
	if c.agent == "" {
		t.leaveUnauthenticated(c)
		c.inAll, c.inClient = nil, nil
	} else {
		t.leaveAgent(c)
	}
	c.agent = agent
	a.n++
	t.mu.Unlock()
	if cut != nil {
		cut.Conn.Close()
	}
	return true
}

// clientOf is the unit of the per-address bounds for the client at addr
// (host:port): its IP address, an IPv6 one by its /64 (one host commonly
// holds a whole /64); "" when the address names no one (loopback).
func (t *connTable) clientOf(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil || !t.namesSomeone(ip):
		return ""
	case ip.To4() != nil:
		return ip.To4().String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// trackedOf is the trackedConn beneath nc (a TLS connection's own), if
// any.
func trackedOf(nc net.Conn) *trackedConn {
	for {
		switch c := nc.(type) {
		case *trackedConn:
			return c
		case interface{ NetConn() net.Conn }:
			nc = c.NetConn()
		default:
			return nil
		}
	}
}

type trackedKey struct{}

// trackedConnOf is the trackedConn the request of ctx came on (nil: its
// server does not count connections).
func trackedConnOf(ctx context.Context) *trackedConn {
	c, _ := ctx.Value(trackedKey{}).(*trackedConn)
	return c
}

// waitOrCut waits d, or until ctx ends or c is cut (c may be nil).
func waitOrCut(ctx context.Context, c *trackedConn, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	var cut <-chan struct{}
	if c != nil {
		cut = c.done
	}
	select {
	case <-timer.C:
	case <-ctx.Done():
	case <-cut:
	}
}
