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
	"sync/atomic"
	"testing"
	"time"

	"aipm/fsstore"
	"aipm/mcpserver"
)

// serveHTTPHere serves the project over HTTP in this process, as aipm
// serve --http does (HTTP.Server, HTTP.Listener) but with lim, and
// returns its URL; it stops when the test ends.
func (p *project) serveHTTPHere(lim mcpserver.HTTPLimits) string {
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

// Issue 34, item 13: 2,000 slow connections without a token, from four
// client addresses, hold no more than the per-address bound; an agent's
// call from another address answers while they are held; and connections
// that stall in their headers, in their body, or idle are closed after
// the timeouts.
func TestHTTPSlowClients(t *testing.T) {
	p := newProject(t)
	const perClient = 50
	// Timeouts far longer than the test: what is held stays held.
	url := p.serveHTTPHere(mcpserver.HTTPLimits{ConnsPerClient: perClient, HeaderTimeout: 10 * time.Minute, BodyTimeout: 10 * time.Minute})

	// 1,800 requests stalled in their headers from three addresses, 200
	// without a body (and without a token) from a fourth.
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
	for _, c := range bodiless {
		if a := c.answer(); a != "" && !strings.HasPrefix(a, "HTTP/1.1 401") && !strings.HasPrefix(a, "HTTP/1.1 429") {
			t.Fatalf("a request without a token or body got %q; want 401, 429 (the address's back-off) or a closed connection", a)
		}
	}

	// An agent from another address is served while they are held.
	start := time.Now()
	cs := p.connectHTTP(url, "2025-11-25", p.passkeys["coder"], nil)
	token := p.authenticateHeld(cs, "coder", fsstore.PurposeChat)
	if r := call(t, cs, "help", map[string]any{"session_token": token}); r.isError {
		t.Fatalf("help: %s", r.text)
	}
	t.Logf("the agent connected, authenticated and called in %v with %d slow connections held", time.Since(start), held)
	if n := countClosed(stalled); n != len(stalled)-held {
		t.Fatalf("%d stalled connections were closed meanwhile; the agent was not served while %d were held", n-(len(stalled)-held), held)
	}

	// Short timeouts: stalled headers, a stalled body (an agent's, past
	// the token check) and an idle keep-alive connection are closed.
	const timeout = 300 * time.Millisecond
	url = p.serveHTTPHere(mcpserver.HTTPLimits{HeaderTimeout: timeout, BodyTimeout: timeout, IdleTimeout: timeout})
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
	cs = p.connectHTTP(url, "2025-11-25", p.passkeys["reviewer"], nil)
	token = p.authenticateHeld(cs, "reviewer", fsstore.PurposeChat)
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

// maxChecks is how many wrong tokens in a row fsstore.BackoffAfter lets
// one agent's passkey be compared with within span.
func maxChecks(span time.Duration) int {
	n, at := 1, time.Duration(0)
	for {
		at += fsstore.BackoffAfter(n)
		if at > span {
			return n
		}
		n++
	}
}

// Issue 34, item 14: guesses from 200 client addresses at two aipm serve
// --http processes are compared with each agent's passkey no more often
// than the documented schedule allows one guesser (bearer.json, shared);
// every other guess is refused (429) before any comparison.
func TestHTTPGuessesBoundedPerAgent(t *testing.T) {
	p := newProject(t)
	servers := []*httpServer{p.serveHTTP(), p.serveHTTP()}
	const clients = 200
	var checked, refused, sent atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(fmt.Sprintf("127.0.1.%d", 10+c))}}
			client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
			defer client.CloseIdleConnections()
			for i := 0; time.Since(start) < 3*time.Second; i++ {
				req, _ := http.NewRequest(http.MethodPost, servers[(c+i)%2].url, strings.NewReader(initBody))
				req.Header.Set("Authorization", "Bearer "+wrongToken(c*1000+i))
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					t.Errorf("client %d: %v", c, err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				sent.Add(1)
				switch resp.StatusCode {
				case http.StatusUnauthorized:
					checked.Add(1)
				case http.StatusTooManyRequests:
					refused.Add(1)
				default:
					t.Errorf("a wrong token: %d", resp.StatusCode)
					return
				}
			}
		}()
	}
	wg.Wait()
	span := time.Since(start)
	bound := maxChecks(span)
	t.Logf("%d guesses in %v: %d compared with the passkeys, %d refused before; the schedule allows %d", sent.Load(), span, checked.Load(), refused.Load(), bound)
	if checked.Load() > int64(bound) || checked.Load() < 4 {
		t.Fatalf("%d guesses were compared with the passkeys in %v; the schedule allows %d (and the first 4 are free)", checked.Load(), span, bound)
	}
	// Each guess compared was compared with both agents' passkeys, and
	// counted for each.
	var doc struct {
		Agents map[string]struct{ Failures int } `json:"agents"`
	}
	if err := readDoc(filepath.Join(p.store.Root(), "bearer.json"), &doc); err != nil {
		t.Fatal(err)
	}
	for _, agent := range []string{"coder", "reviewer"} {
		if got := doc.Agents[agent].Failures; int64(got) != checked.Load() {
			t.Errorf("bearer.json counts %d wrong tokens for %s; %d were compared", got, agent, checked.Load())
		}
	}
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
