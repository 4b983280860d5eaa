package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"aipm/fsstore"
	"aipm/mcpserver"
)

// serveHTTPHere serves the project over HTTP in this process, as aipm
// serve --http does (HTTP.Server, HTTP.Listener) but with lim and each
// of setup run on its handler first, and returns its URL; it stops when
// the test ends.
func (p *project) serveHTTPHere(lim mcpserver.HTTPLimits, setup ...func(*mcpserver.HTTP)) string {
	p.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		p.t.Fatal(err)
	}
	origin := "http://" + ln.Addr().String()
	h, err := mcpserver.NewHTTP(p.store, slog.New(slog.NewTextHandler(io.Discard, nil)), "test", mcpserver.HTTPOptions{Origin: origin, Limits: lim})
	if err != nil {
		p.t.Fatal(err)
	}
	for _, f := range setup {
		f(h)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	srv := h.Server(mux)
	go srv.Serve(h.Listener(ln))
	p.t.Cleanup(func() {
		srv.Close()
		h.Close(context.Background())
	})
	return origin + "/mcp"
}

// rawConn is a TCP connection of a test client from a loopback address
// of its own, whose end the server's close marks.
type rawConn struct {
	net.Conn
	closed chan struct{} // closed once the server closed the connection
	mu     sync.Mutex
	got    bytes.Buffer // what the server wrote
}

// dialFrom connects from the loopback address local to url's host and
// sends first (a request, or part of one).
func dialFrom(t *testing.T, local, url, first string) *rawConn {
	t.Helper()
	host := strings.TrimPrefix(strings.TrimSuffix(url, "/mcp"), "http://")
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c, err := d.Dial("tcp", host)
	if err != nil {
		t.Fatalf("dial from %s: %v", local, err)
	}
	t.Cleanup(func() { c.Close() })
	rc := &rawConn{Conn: c, closed: make(chan struct{})}
	go func() {
		defer close(rc.closed)
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf)
			rc.mu.Lock()
			rc.got.Write(buf[:n])
			rc.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	if _, err := io.WriteString(c, strings.ReplaceAll(first, "HOST", host)); err != nil {
		select {
		case <-rc.closed: // closed by the server already: what the test counts
		default:
			t.Fatalf("write from %s: %v", local, err)
		}
	}
	return rc
}

func (c *rawConn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

func (c *rawConn) answer() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.got.String()
}

func countClosed(conns []*rawConn) int {
	n := 0
	for _, c := range conns {
		if c.isClosed() {
			n++
		}
	}
	return n
}

// Requests that are never finished: headers without their end, and
// headers whose body never comes.
const (
	partialHeaders = "POST /mcp HTTP/1.1\r\nHost: HOST\r\nContent-Type: application/json\r\n"
	noBody         = "POST /mcp HTTP/1.1\r\nHost: HOST\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 10\r\n\r\n"
)

// bodyPart is the headers of a POST with token and Content-Length n, and
// the first byte of its body.
func bodyPart(token string, n int) string {
	return "POST /mcp HTTP/1.1\r\nHost: HOST\r\nAuthorization: Bearer " + token +
		"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: " + strconv.Itoa(n) + "\r\n\r\n{"
}

// someoneAt takes the loopback addresses 127.0.0.2 to 127.0.0.9 for
// addresses that name someone (as another machine's would), so that the
// bounds per client address apply to them.
func someoneAt(h *mcpserver.HTTP) {
	h.SetNamesSomeone(func(ip net.IP) bool {
		ip4 := ip.To4()
		return ip4 != nil && ip4[0] == 127 && ip4[1] == 0 && ip4[2] == 0 && ip4[3] >= 2 && ip4[3] <= 9
	})
}

// Issue 34, item 13, and issue 46, items 9 and 10: slow connections
// without a token are bounded per client address where an address names
// someone, and in all. 1,800 stalled in their headers from three such
// addresses and 200 without a token from a fourth keep no more than the
// bound of each address, the newest (the oldest are cut); a prompt agent
// from one of those addresses, and one from loopback, are served while
// they are held. From loopback, which names no one, 400 stalled
// connections are held up to the total, no further. Connections that
// stall in their headers, in their body, or idle are closed after the
// timeouts.
func TestHTTPSlowClients(t *testing.T) {
	p := newProject(t)
	const perClient = 50
	// Timeouts far longer than the test: what is held stays held.
	url := p.serveHTTPHere(mcpserver.HTTPLimits{ConnsPerClient: perClient, HeaderTimeout: 10 * time.Minute, BodyTimeout: 10 * time.Minute, GuessDelay: 10 * time.Millisecond}, someoneAt)

	var stalled, bodiless []*rawConn
	for i := range 1800 {
		stalled = append(stalled, dialFrom(t, fmt.Sprintf("127.0.0.%d", 2+i%3), url, partialHeaders))
	}
	for range 200 {
		bodiless = append(bodiless, dialFrom(t, "127.0.0.5", url, noBody))
	}
	held := 3 * perClient
	waitUntil(t, 60*time.Second, "the connections past the bound were not closed", func() bool {
		return countClosed(bodiless) == len(bodiless) && countClosed(stalled) == len(stalled)-held
	})
	for i, c := range stalled {
		if newest := i >= len(stalled)-held; c.isClosed() == newest {
			t.Fatalf("stalled connection %d of %d: closed %v; want the %d newest held, the older ones cut", i, len(stalled), c.isClosed(), held)
		}
	}
	for _, c := range bodiless {
		if a := c.answer(); a != "" && !strings.HasPrefix(a, "HTTP/1.1 401") && !strings.HasPrefix(a, "HTTP/1.1 429") {
			t.Fatalf("a request without a token or body got %q; want 401, 429 (the address's back-off) or a closed connection", a)
		}
	}

	// Agents are served while they are held: one from loopback, and one
	// from an address at its bound (its connection is the newest).
	for _, from := range []string{"127.0.0.1", "127.0.0.2"} {
		client := localClient(from, 1, nil)
		if err := callHelp(client, url, p.passkeys["coder"]); err != nil {
			t.Fatalf("an agent from %s while slow connections are held: %v", from, err)
		}
		client.CloseIdleConnections()
	}
	cs := p.connectHTTP(url, "2025-11-25", p.passkeys["coder"], nil)
	token := p.authenticateHeld(cs, "coder", fsstore.PurposeChat)
	if r := call(t, cs, "help", map[string]any{"session_token": token}); r.isError {
		t.Fatalf("help: %s", r.text)
	}
	// The agent's connection from 127.0.0.2 cut that address's oldest.
	waitUntil(t, 60*time.Second, "the agent's connection from an address at its bound cut none", func() bool { return countClosed(stalled) == len(stalled)-held+1 })
	if !stalled[len(stalled)-held].isClosed() {
		t.Fatal("the agent's connection from 127.0.0.2 cut another than its address's oldest")
	}

	// From loopback, the total bounds them.
	const total = 100
	url = p.serveHTTPHere(mcpserver.HTTPLimits{Unauthenticated: total, HeaderTimeout: 10 * time.Minute})
	var local []*rawConn
	for range 4 * total {
		local = append(local, dialFrom(t, "127.0.0.1", url, partialHeaders))
	}
	waitUntil(t, 60*time.Second, "the loopback connections past the total were not closed", func() bool { return countClosed(local) == len(local)-total })
	if err := callHelp(localClient("127.0.0.1", 0, nil), url, p.passkeys["coder"]); err != nil {
		t.Fatalf("an agent from loopback with the total held: %v", err)
	}

	checkTimeouts(t, p)
}

// checkTimeouts: with short timeouts, stalled headers, a stalled body (an
// agent's, past the token check) and an idle keep-alive connection are
// closed; a call that waits longer than the body timeout still answers.
func checkTimeouts(t *testing.T, p *project) {
	const timeout = 300 * time.Millisecond
	url := p.serveHTTPHere(mcpserver.HTTPLimits{HeaderTimeout: timeout, BodyTimeout: timeout, IdleTimeout: timeout})
	var headers, bodies, idle []*rawConn
	for range 10 {
		headers = append(headers, dialFrom(t, "127.0.0.6", url, partialHeaders))
		bodies = append(bodies, dialFrom(t, "127.0.0.6", url, bodyPart(p.passkeys["coder"], 100)))
		idle = append(idle, dialFrom(t, "127.0.0.6", url, "GET /mcp HTTP/1.1\r\nHost: HOST\r\nAuthorization: Bearer "+p.passkeys["coder"]+"\r\nAccept: text/event-stream\r\n\r\n"))
	}
	for what, conns := range map[string][]*rawConn{"stalled headers": headers, "a stalled body": bodies, "idle": idle} {
		waitUntil(t, 60*time.Second, what+": connections not closed after the timeout", func() bool { return countClosed(conns) == len(conns) })
	}
	for _, c := range idle {
		if a := c.answer(); !strings.HasPrefix(a, "HTTP/1.1 400") || strings.Contains(a, "Connection: close") {
			t.Fatalf("the idle connection's request: %q; want an answer that keeps the connection", a)
		}
	}
	for _, c := range bodies {
		if a := c.answer(); strings.HasPrefix(a, "HTTP/1.1 401") || strings.HasPrefix(a, "HTTP/1.1 429") {
			t.Fatalf("an agent's request with a stalled body was refused before its body: %q", a)
		}
	}

	// A call that waits longer than the body timeout still answers: the
	// deadline ends with the body.
	cs := p.connectHTTP(url, "2025-11-25", p.passkeys["reviewer"], nil)
	token := p.authenticateHeld(cs, "reviewer", fsstore.PurposeChat)
	if r := call(t, cs, "get_next_action", map[string]any{"session_token": token, "wait_seconds": 2}); r.isError {
		t.Fatalf("a wait longer than the body timeout: %s", r.text)
	}
}

// wrongToken is a token of a passkey's form that is no agent's.
func wrongToken(i int) string {
	var key [32]byte
	copy(key[:], fmt.Sprintf("guess %d", i))
	return "aipk_" + base64.RawURLEncoding.EncodeToString(key[:])
}

// vmHWM is the peak resident set of process pid, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// initSession opens an MCP session with a raw initialize and returns its
// id ("" and the answer when refused).
func initSession(t *testing.T, url, token string) (string, *http.Response, string) {
	t.Helper()
	resp, body := post(t, &http.Client{}, url, initBody, bearerOf(token))
	if resp.StatusCode != http.StatusOK {
		return "", resp, body
	}
	id := resp.Header.Get("Mcp-Session-Id")
	post(t, &http.Client{}, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, with(bearerOf(token), "Mcp-Session-Id", id, "Mcp-Protocol-Version", "2025-06-18"))
	return id, resp, body
}

// Issue 34, item 15: one agent cannot exhaust a shared aipm serve --http:
// 20 parallel 15 MiB calls (with and without Content-Length) leave its
// peak RSS under 100 MB; its calls in flight and its MCP sessions are
// capped, with an answer that says so; the largest call a tool accepts
// still passes.
func TestHTTPAgentBounds(t *testing.T) {
	p := newProject(t)
	srv := p.serveHTTP()
	token := p.passkeys["coder"]
	checkHugeCallsBounded(t, srv, token)
	checkLargestCallPasses(t, srv.url, token)
	checkCallsInFlightBounded(t, srv.url, token)
	checkSessionsBounded(t, srv.url, token, p.passkeys["reviewer"])
	checkConnsPerAgentBounded(t, srv.url, token, p.passkeys["reviewer"])
}

// rawHelp is a whole help call (helpCall) as the agent whose passkey
// token is, as it goes on the wire.
func rawHelp(token string) string {
	return "POST /mcp HTTP/1.1\r\nHost: HOST\r\nAuthorization: Bearer " + token + "\r\nContent-Type: application/json\r\n" +
		"Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: help\r\n" +
		"Content-Length: " + strconv.Itoa(len(helpCall)) + "\r\n\r\n" + helpCall
}

// answered says whether c got n whole answers (200, chunked).
func (c *rawConn) answered(n int) bool {
	a := c.answer()
	return strings.Count(a, "HTTP/1.1 200 OK") == n && strings.HasSuffix(a, "0\r\n\r\n")
}

// checkConnsPerAgentBounded (issue 46, item 9): an agent's connections
// are bounded, its own longest idle cut first; another agent's and its
// newest are untouched, and a held one still serves.
func checkConnsPerAgentBounded(t *testing.T, url, token, otherToken string) {
	limit, more := mcpserver.DefaultHTTPLimits.ConnsPerAgent, 8
	// The checks before leave connections of the agent's in the default
	// pool: closed, they are not the agent's longest idle ones.
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	var conns []*rawConn
	for i := range limit + more {
		c := dialFrom(t, "127.0.0.1", url, rawHelp(token))
		waitUntil(t, 30*time.Second, fmt.Sprintf("connection %d of the agent was not answered", i+1), func() bool { return c.answered(1) })
		conns = append(conns, c)
	}
	waitUntil(t, 30*time.Second, "the agent's connections past its bound were not cut", func() bool { return countClosed(conns) >= more })
	for i, c := range conns {
		if c.isClosed() != (i < more) {
			t.Fatalf("connection %d of %d: closed %v; want the %d longest idle cut, the rest held", i+1, len(conns), c.isClosed(), more)
		}
	}
	other := dialFrom(t, "127.0.0.1", url, rawHelp(otherToken))
	waitUntil(t, 30*time.Second, "another agent's call was not answered", func() bool { return other.answered(1) })
	last := conns[len(conns)-1]
	if _, err := io.WriteString(last, strings.ReplaceAll(rawHelp(token), "HOST", strings.TrimPrefix(strings.TrimSuffix(url, "/mcp"), "http://"))); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "a held connection of the agent did not serve its next call", func() bool { return last.answered(2) })
	if n := countClosed(conns); n != more {
		t.Fatalf("%d of the agent's connections were cut; want %d", n, more)
	}
	for _, c := range append(conns, other) {
		c.Close()
	}
}

// checkHugeCallsBounded: 20 parallel 15 MiB calls, every other one sent
// chunked, are each refused as too large (naming the limit) or as too
// many, and leave the server's peak RSS under 100 MiB.
func checkHugeCallsBounded(t *testing.T, srv *httpServer, token string) {
	huge := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"send_message","arguments":{"content":"` + strings.Repeat("x", 15<<20) + `"}}}`
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() { checkHugeCallRefused(t, srv.url, token, huge, i%2 == 1) })
	}
	wg.Wait()
	hwm := vmHWM(t, srv.cmd.Process.Pid)
	t.Logf("peak RSS of aipm serve --http after 20 parallel 15 MiB calls: %d MiB", hwm>>20)
	if hwm > 100<<20 {
		t.Fatalf("peak RSS %d MiB; want under 100 MiB", hwm>>20)
	}
}

// checkHugeCallRefused posts the huge call, chunked (no length known) or
// not: unless the server closes the connection as the body keeps coming,
// it answers 413 naming the limit, or 429.
func checkHugeCallRefused(t *testing.T, url, token, huge string, chunked bool) {
	var body io.Reader = strings.NewReader(huge)
	if chunked {
		body = io.MultiReader(body) // no length known: sent chunked
	}
	req, _ := http.NewRequest(http.MethodPost, url, body)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return // the server closed the connection as the body kept coming
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge && resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a 15 MiB call: %d %.200s", resp.StatusCode, data)
	}
	if resp.StatusCode == http.StatusRequestEntityTooLarge && !strings.Contains(string(data), strconv.Itoa(mcpserver.MaxToolCall)) {
		t.Errorf("the refusal of a 15 MiB call does not name the limit: %s", data)
	}
}

// checkLargestCallPasses: the largest call a tool takes, request_task's
// title and description at their limits, every character a JSON-escaped
// surrogate pair, is answered in an MCP session it opens (and leaves
// open).
func checkLargestCallPasses(t *testing.T, url, token string) {
	id, resp, body := initSession(t, url, token)
	if id == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	astral := `\ud83d\ude00` // one character
	largest := fmt.Sprintf(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"request_task","arguments":{"session_token":"ses_x.y","title":"%s","description":"%s"}}}`,
		strings.Repeat(astral, fsstore.MaxTitle), strings.Repeat(astral, fsstore.MaxDescription))
	resp, body = post(t, &http.Client{}, url, largest, with(bearerOf(token), "Mcp-Session-Id", id, "Mcp-Protocol-Version", "2025-06-18"))
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"id":8`) {
		t.Fatalf("the largest call a tool accepts (%d bytes): %d %.300s", len(largest), resp.StatusCode, body)
	}
}

// checkCallsInFlightBounded: requests whose body is still coming hold
// their places; one past the bound is refused at once, saying so, and
// only that one.
func checkCallsInFlightBounded(t *testing.T, url, token string) {
	calls := mcpserver.DefaultHTTPLimits.CallsPerAgent
	var slow []*rawConn
	for range calls + 1 {
		slow = append(slow, dialFrom(t, "127.0.0.1", url, bodyPart(token, 100)))
	}
	var refusedCall *rawConn
	waitUntil(t, 30*time.Second, "no call past the bound was refused", func() bool {
		refusedCall = firstClosed(slow)
		return refusedCall != nil
	})
	if a := refusedCall.answer(); !strings.HasPrefix(a, "HTTP/1.1 429") || !strings.Contains(a, fmt.Sprintf("coder has %d calls in flight", calls)) || !strings.Contains(a, "wait for one to answer") {
		t.Fatalf("the call past the bound: %q", a)
	}
	if n := countClosed(slow); n != 1 {
		t.Fatalf("%d calls in flight were refused; want 1", n)
	}
	for _, c := range slow {
		c.Close()
	}
}

// firstClosed is the first of conns the server closed, or nil.
func firstClosed(conns []*rawConn) *rawConn {
	for _, c := range conns {
		if c.isClosed() {
			return c
		}
	}
	return nil
}

// checkSessionsBounded: the agent opens MCP sessions up to the bound (the
// largest call's is open already), then is refused with what to do;
// another agent is not; a session ended makes room.
func checkSessionsBounded(t *testing.T, url, token, otherToken string) {
	ids := []string{sessionOnceCallsGiveBack(t, url, token)}
	sessions := mcpserver.DefaultHTTPLimits.SessionsPerAgent
	for len(ids) < sessions-1 { // the one of the largest call is open too
		id, resp, body := initSession(t, url, token)
		if id == "" {
			t.Fatalf("session %d of at most %d: %d %s", len(ids)+2, sessions, resp.StatusCode, body)
		}
		ids = append(ids, id)
	}
	_, resp, body := initSession(t, url, token)
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, fmt.Sprintf("coder has %d MCP sessions open", sessions)) || !strings.Contains(body, "close the MCP clients") {
		t.Fatalf("a session past the bound: %d %s", resp.StatusCode, body)
	}
	if id, resp, body := initSession(t, url, otherToken); id == "" {
		t.Fatalf("another agent's session was refused: %d %s", resp.StatusCode, body)
	}
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", ids[0])
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE a session: %v %v", resp, err)
	}
	if id, resp, body := initSession(t, url, token); id == "" {
		t.Fatalf("a session after one ended: %d %s", resp.StatusCode, body)
	}
}

// sessionOnceCallsGiveBack opens an MCP session as soon as the slow
// calls' places are given back (until then initialize is refused for
// calls in flight; any other refusal fails the test) and returns its id.
func sessionOnceCallsGiveBack(t *testing.T, url, token string) string {
	t.Helper()
	var opened string
	waitUntil(t, 30*time.Second, "the slow calls' places were not given back", func() bool {
		id, resp, body := initSession(t, url, token)
		switch {
		case id != "":
			opened = id
			return true
		case resp.StatusCode == http.StatusTooManyRequests && strings.Contains(body, "calls in flight"):
			return false
		}
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
		return false
	})
	return opened
}

// Every tool's largest call fits in a request body: its free-text fields
// at their limits, each character a JSON-escaped surrogate pair (12
// bytes), and room for its ids and the JSON-RPC frame.
func TestMaxToolCallFitsEveryTool(t *testing.T) {
	paths, err := filepath.Glob("schemas/*.input.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no input schemas: %v", err)
	}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(data, &schema); err != nil {
			t.Fatal(err)
		}
		size := 4 << 10 // the frame, ids, enums and numbers
		for name := range schema.Properties {
			size += 12 * fsstore.TextLimits[name]
		}
		size += fsstore.MaxMarkRead * 64 // mark_read's message ids
		if size > mcpserver.MaxToolCall {
			t.Errorf("%s: its largest call may take %d bytes, over MaxToolCall (%d)", filepath.Base(path), size, mcpserver.MaxToolCall)
		}
	}
}
