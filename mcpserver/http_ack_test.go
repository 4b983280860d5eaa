package mcpserver_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"aipm/fsstore"
	"aipm/mcpserver"
)

// Over HTTP a connection's order proves nothing of an answer (links.go):
// only the client's own acknowledgement does, the ack its answer carried,
// passed on a later call. These tests drive a real aipm serve --http
// through the paths where a connection's order lies.

// rawCall is the body of a tools/call of tool with args.
func rawCall(id int, tool string, args map[string]any) string {
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	return string(data)
}

// request is the HTTP request that posts body in m's MCP session, in
// proto (HTTP/1.1, kept alive; HTTP/1.0, closed after the answer).
func (m rawMCP) request(body, proto string) string {
	var req strings.Builder
	fmt.Fprintf(&req, "POST /mcp %s\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n", proto, m.addr, len(body))
	for k, v := range m.hdr {
		fmt.Fprintf(&req, "%s: %s\r\n", k, v)
	}
	return req.String() + "\r\n" + body
}

// answerOf decodes the JSON-RPC answer to a tools/call from resp.
func answerOf(t testing.TB, resp *http.Response) result {
	t.Helper()
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the answer: status %d, %v: %.300s", resp.StatusCode, err, data)
	}
	var rpc struct {
		Result struct {
			IsError           bool             `json:"isError"`
			Content           []map[string]any `json:"content"`
			StructuredContent map[string]any   `json:"structuredContent"`
		} `json:"result"`
		Error any `json:"error"`
	}
	if err := json.Unmarshal(data, &rpc); err != nil || rpc.Error != nil {
		t.Fatalf("the answer is no tools/call result (%v): %.300s", err, data)
	}
	var texts []string
	for _, c := range rpc.Result.Content {
		if s, ok := c["text"].(string); ok {
			texts = append(texts, s)
		}
	}
	return result{isError: rpc.Result.IsError, text: strings.Join(texts, "\n"), data: rpc.Result.StructuredContent}
}

// callOnce posts body on a connection of its own, in proto, and reads its
// answer: a client that opens a new connection per call.
func (m rawMCP) callOnce(t testing.TB, body, proto string) result {
	t.Helper()
	conn, err := net.Dial("tcp", m.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(60 * time.Second))
	if proto == "HTTP/1.1" {
		body = strings.Replace(m.request(body, proto), "\r\n\r\n", "\r\nConnection: close\r\n\r\n", 1)
	} else {
		body = m.request(body, proto)
	}
	if _, err := conn.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	return answerOf(t, resp)
}

// waitAnswers waits until n HTTP answers have arrived whole on conn,
// unread (a peek at the socket: the client takes none of it).
func waitAnswers(t testing.TB, conn *net.TCPConn, n int) {
	t.Helper()
	rc, err := conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4<<20)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var got int
		rc.Read(func(fd uintptr) bool {
			got, _, _ = syscall.Recvfrom(int(fd), buf, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			return true
		})
		if wholeAnswers(buf[:max(got, 0)]) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d answers never arrived: %.300q", n, buf[:max(got, 0)])
		}
	}
}

// wholeAnswers counts the whole HTTP responses at the start of data.
func wholeAnswers(data []byte) int {
	r := bufio.NewReader(bytes.NewReader(data))
	for n := 0; ; n++ {
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			return n
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return n
		}
	}
}

// sendN sends n messages from lead to reviewer, "00" to n-1.
func (p *project) sendN(n int) {
	for i := range n {
		p.send("lead", "reviewer", fmt.Sprintf("%02d", i))
	}
}

// wantAll checks that r handed messages 00 to n-1 in order, each marked
// redelivered or each not, as redelivered says.
func wantAll(t *testing.T, r result, n int, redelivered bool, what string) {
	t.Helper()
	got := msgs(r)
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("%02d", i)
		if redelivered {
			want[i] = "*" + want[i]
		}
	}
	if r.isError || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("%s: got %v, want %v: %.300s", what, got, want, r.text)
	}
}

// poolingRelay is a reverse proxy of the test that pools its upstream
// connection, as nginx (keepalive), Caddy and HAProxy do: the requests of
// every client connection go to aipm serve --http, one at a time, over one
// upstream connection that outlives the clients.
type poolingRelay struct {
	addr    string
	target  string
	mu      sync.Mutex // one exchange at a time on the upstream connection
	up      net.Conn
	upr     *bufio.Reader
	answers chan struct{} // one per answer read from upstream
}

// startRelay listens on loopback and relays to target (host:port).
func startRelay(t *testing.T, target string) *poolingRelay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up, err := net.Dial("tcp", target)
	if err != nil {
		t.Fatal(err)
	}
	r := &poolingRelay{addr: ln.Addr().String(), target: target, up: up, upr: bufio.NewReader(up), answers: make(chan struct{}, 100)}
	t.Cleanup(func() { ln.Close(); up.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go r.serve(c)
		}
	}()
	return r
}

// serve relays the requests of one client connection.
func (r *poolingRelay) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, _ := io.ReadAll(req.Body)
		resp, answer, err := r.exchange(req, body)
		if err != nil {
			return
		}
		resp.Body = io.NopCloser(bytes.NewReader(answer))
		if resp.Write(c) != nil {
			return // the client went away: the upstream connection stays pooled
		}
	}
}

// exchange sends req upstream, as a proxy does (its own connection
// header: kept alive), and reads the whole answer.
func (r *poolingRelay) exchange(req *http.Request, body []byte) (*http.Response, []byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	req.Header.Del("Connection")
	req.Close = false
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	if err := req.Write(r.up); err != nil {
		return nil, nil, err
	}
	resp, err := http.ReadResponse(r.upr, req)
	if err != nil {
		return nil, nil, err
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	r.answers <- struct{}{}
	return resp, answer, err
}

// via is m with its requests sent to the relay.
func (m rawMCP) via(r *poolingRelay) rawMCP {
	m.addr = r.addr
	return m
}

// Through a reverse proxy that pools its upstream connection: a client
// posts get_pending_messages and dies before reading the answer; the next
// client's call (another process, with the same session_token) travels the
// same upstream connection, after that answer. It proves nothing: the next
// read gets every message again, marked redelivered; with the ack that
// answer carried, the read after it gets nothing, and get_next_action
// waits. Then the same with an ack-aware client, and a get_next_action
// that comes next.
func TestHTTPPoolingProxyLosesNothing(t *testing.T) {
	for _, next := range []string{"get_pending_messages", "get_next_action"} {
		t.Run(next, func(t *testing.T) {
			p := newProject(t)
			srv := p.serveHTTP()
			direct := p.rawMCP(srv, "reviewer")
			relay := startRelay(t, direct.addr)
			raw := direct.via(relay)
			reviewer := p.connectHTTP(srv.url, "2025-11-25", p.passkeys["reviewer"], nil)
			tok := p.authenticateHeld(reviewer, "reviewer", fsstore.PurposeChat)
			const n = 15
			p.sendN(n)

			// The first client: its request goes upstream, the answer comes
			// back to the relay, and the client is gone.
			conn, err := net.Dial("tcp", relay.addr)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Write([]byte(raw.request(rawCall(7, "get_pending_messages", map[string]any{"session_token": tok}), "HTTP/1.1"))); err != nil {
				t.Fatal(err)
			}
			<-relay.answers
			reset(conn.(*net.TCPConn))

			// The next client, through the same upstream connection.
			args := map[string]any{"session_token": tok}
			if next == "get_next_action" {
				args["wait_seconds"] = 1
				if r := raw.callOnce(t, rawCall(8, next, args), "HTTP/1.1"); r.str("action") != "get_pending_messages" {
					t.Fatalf("after the lost answer, get_next_action: %s; want the messages unread", r.text)
				}
				<-relay.answers
			}
			r := raw.callOnce(t, rawCall(9, "get_pending_messages", map[string]any{"session_token": tok}), "HTTP/1.1")
			<-relay.answers
			wantAll(t, r, n, true, "the read after the lost answer")
			ack := r.str("ack")
			if ack == "" {
				t.Fatalf("an answer that hands a batch carries no ack: %s", r.text)
			}
			if r := raw.callOnce(t, rawCall(10, "get_next_action", map[string]any{"session_token": tok, "ack": ack, "wait_seconds": 1}), "HTTP/1.1"); r.str("action") != "wait_for_messages" {
				t.Fatalf("get_next_action with the ack: %s; want it to wait, the batch read", r.text)
			}
			<-relay.answers
			if r := raw.callOnce(t, rawCall(11, "get_pending_messages", map[string]any{"session_token": tok}), "HTTP/1.1"); len(msgs(r)) != 0 {
				t.Fatalf("after the ack: %v", msgs(r))
			}
		})
	}
}

// Pipelined calls: two tools/call requests in one write on one
// connection, the second sent before the first answer was read, and the
// connection reset with both answers unread. Nothing is lost: the next read
// gets every message again, marked. A session that never acknowledged
// loses nothing in one such round (the bound on redeliveries is further);
// one that acknowledged before is held to its acknowledgements: however
// many answers go out unread, none counts as read.
func TestHTTPPipelinedCallsLoseNothing(t *testing.T) {
	for _, second := range []string{"get_pending_messages", "get_next_action", "list_tasks"} {
		for _, acked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s acked before %v", second, acked), func(t *testing.T) {
				p := newProject(t)
				srv := p.serveHTTP()
				raw := p.rawMCP(srv, "reviewer")
				reviewer := p.connectHTTP(srv.url, "2025-11-25", p.passkeys["reviewer"], nil)
				tok := p.authenticateHeld(reviewer, "reviewer", fsstore.PurposeChat)
				rounds := 1
				if acked {
					p.send("coder", "reviewer", "first")
					r := call(t, reviewer, "get_pending_messages", map[string]any{"session_token": tok})
					if got := msgs(r); len(got) != 1 || r.str("ack") == "" {
						t.Fatalf("the first read: %v, ack %q", got, r.str("ack"))
					}
					if got := msgs(call(t, reviewer, "get_pending_messages", map[string]any{"session_token": tok, "ack": r.str("ack")})); len(got) != 0 {
						t.Fatalf("the read with the ack: %v", got)
					}
					rounds = 5
				}
				const n = 15
				p.sendN(n)
				args := map[string]any{"session_token": tok}
				if second == "get_next_action" {
					args["wait_seconds"] = 1
				}
				for range rounds {
					conn, err := net.Dial("tcp", raw.addr)
					if err != nil {
						t.Fatal(err)
					}
					two := raw.request(rawCall(7, "get_pending_messages", map[string]any{"session_token": tok}), "HTTP/1.1") + raw.request(rawCall(8, second, args), "HTTP/1.1")
					if _, err := conn.Write([]byte(two)); err != nil {
						t.Fatal(err)
					}
					waitAnswers(t, conn.(*net.TCPConn), 2)
					reset(conn.(*net.TCPConn))
				}
				wantAll(t, call(t, reviewer, "get_pending_messages", map[string]any{"session_token": tok}), n, true, fmt.Sprintf("after %d rounds of pipelined calls", rounds))
			})
		}
	}
}

// readsOf is one kind of client that opens a new connection per call:
// it calls tool with args and returns the result.
type readsOf func(t *testing.T, tool string, args map[string]any) result

// A client that opens a new connection per call (Go's net/http with
// DisableKeepAlives, as a script; an HTTP/1.0 client), at each protocol
// revision. One that passes the ack its answer carried has the batch read:
// the next get_next_action waits, the next read gets nothing. One that
// never passes it gets every message again, marked, on its next reads, at
// most mcpserver.UnackedBound times in all; then the batch counts as read
// and get_next_action waits.
func TestHTTPNewConnectionPerCall(t *testing.T) {
	clients := map[string]func(p *project, srv *httpServer, rev string) readsOf{
		"net/http without keep-alive": func(p *project, srv *httpServer, rev string) readsOf {
			cs := p.connectHTTP(srv.url, rev, p.passkeys["reviewer"], &http.Transport{DisableKeepAlives: true})
			return func(t *testing.T, tool string, args map[string]any) result { return call(t, cs, tool, args) }
		},
		"HTTP/1.0": func(p *project, srv *httpServer, _ string) readsOf {
			raw := p.rawMCP(srv, "reviewer")
			id := 100
			return func(t *testing.T, tool string, args map[string]any) result {
				id++
				return raw.callOnce(t, rawCall(id, tool, args), "HTTP/1.0")
			}
		},
	}
	for name, connect := range clients {
		for _, rev := range revisions {
			if name == "HTTP/1.0" && rev != "2025-06-18" {
				continue // rawMCP speaks 2025-06-18
			}
			for _, acks := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s %s acks %v", name, rev, acks), func(t *testing.T) {
					p := newProject(t)
					srv := p.serveHTTP()
					do := connect(p, srv, rev)
					if err := p.store.Triggers().Write(t.Context(), fsstore.Trigger{Agent: "reviewer", Purpose: fsstore.PurposeChat, Reason: "test"}); err != nil {
						t.Fatal(err)
					}
					a := do(t, "authenticate", map[string]any{"agent_id": "reviewer", "purpose": fsstore.PurposeChat})
					tok := a.str("session_token")
					if tok == "" {
						t.Fatalf("authenticate: %s", a.text)
					}
					const n = 8
					p.sendN(n)
					args := map[string]any{"session_token": tok}
					r := do(t, "get_pending_messages", args)
					wantAll(t, r, n, false, "the first read")
					if acks {
						if r.str("ack") == "" || !strings.Contains(r.str("instruction"), r.str("ack")) {
							t.Fatalf("the answer carries no ack, or does not say to pass it: %s", r.text)
						}
						if w := do(t, "get_next_action", map[string]any{"session_token": tok, "ack": r.str("ack"), "wait_seconds": 1}); w.str("action") != "wait_for_messages" {
							t.Fatalf("get_next_action with the ack: %s; want it to wait", w.text)
						}
						if got := msgs(do(t, "get_pending_messages", args)); len(got) != 0 {
							t.Fatalf("after the ack: %v", got)
						}
						return
					}
					for i := 1; i < mcpserver.UnackedBound; i++ {
						if w := do(t, "get_next_action", map[string]any{"session_token": tok, "wait_seconds": 1}); w.str("action") != "get_pending_messages" {
							t.Fatalf("get_next_action before the bound: %s", w.text)
						}
						wantAll(t, do(t, "get_pending_messages", args), n, true, fmt.Sprintf("read %d, unacknowledged", i+1))
					}
					if w := do(t, "get_next_action", map[string]any{"session_token": tok, "wait_seconds": 1}); w.str("action") != "wait_for_messages" {
						t.Fatalf("get_next_action once the batch went out %d times: %s; want it to wait", mcpserver.UnackedBound, w.text)
					}
					if got := msgs(do(t, "get_pending_messages", args)); len(got) != 0 {
						t.Fatalf("after the bound: %v", got)
					}
				})
			}
		}
	}
}

// ackInText is the ack an interrupt notice says to pass.
var ackInText = regexp.MustCompile(`Pass ack="([0-9a-f]+)" in that call\.`)

// An interrupt shown over HTTP in place of a call's answer carries an ack,
// at each protocol revision: the call the notice asks for (report_completed
// in a task session, logout in a chat session) passing it reads the
// interrupt; so does that call without an ack once a call that passed it
// (get_next_action) proved the notice read: the interrupt still replaces
// that call, shown again, and then the one that complies reads it. Without
// any ack the interrupt is taken back, unread, for the agent's next
// session (it comes again, marked). An ack that is not one aipm gives is
// refused and changes nothing.
func TestHTTPInterruptCarriesAck(t *testing.T) {
	for _, rev := range revisions {
		for _, purpose := range []string{fsstore.PurposeTask, fsstore.PurposeChat} {
			for _, how := range []string{"in the call that complies", "in get_next_action first", "none"} {
				acks := how != "none"
				t.Run(fmt.Sprintf("%s %s ack %s", rev, purpose, how), func(t *testing.T) {
					p := newProject(t)
					srv := p.serveHTTP()
					cs := p.connectHTTP(srv.url, rev, p.passkeys["coder"], nil)
					stopped, comply := "list_tasks", map[string]any{}
					interrupt := []string{"interrupt", "coder", "stop now", "--as", "lead"}
					if purpose == fsstore.PurposeTask {
						task := p.taskInProgress("coder", "port the parser")
						stopped, comply = "get_task", map[string]any{"result": "blocked", "summary": "stopped as asked"}
						interrupt = append(interrupt, "--task", task.ID)
					}
					tok := p.authenticateHeld(cs, "coder", purpose)
					p.aipmOut(t, interrupt...)

					before := p.tree()
					if r := call(t, cs, "get_next_action", map[string]any{"session_token": tok, "ack": "not-an-ack"}); r.code() != "invalid_ack" {
						t.Fatalf("a malformed ack: %s", r.text)
					}
					if after := p.tree(); after != before {
						t.Fatalf("a refused ack changed .ai-pm:\n%s\n---\n%s", before, after)
					}
					r := call(t, cs, stopped, map[string]any{"session_token": tok})
					m := ackInText.FindStringSubmatch(r.text)
					if !strings.HasPrefix(r.text, "INTERRUPT") || m == nil {
						t.Fatalf("the interrupt notice carries no ack: %s", r.text)
					}
					comply["session_token"] = tok
					switch how {
					case "in the call that complies":
						comply["ack"] = m[1]
					case "in get_next_action first":
						if r := call(t, cs, "get_next_action", map[string]any{"session_token": tok, "ack": m[1]}); !strings.HasPrefix(r.text, "INTERRUPT") || ackInText.MatchString(r.text) {
							t.Fatalf("get_next_action with the notice's ack: %s; want the interrupt again, with nothing new to acknowledge", r.text)
						}
					}
					tool := "logout"
					if purpose == fsstore.PurposeTask {
						tool = "report_completed"
					}
					if r := call(t, cs, tool, comply); r.isError {
						t.Fatalf("%s: %s", tool, r.text)
					}
					p.interruptRead(t, tok, acks, tool+" (ack "+how+")")
				})
			}
		}
	}
}

// interruptRead checks whether the interrupt of the session tok names is
// read (want) or unread, after what.
func (p *project) interruptRead(t *testing.T, tok string, want bool, what string) {
	t.Helper()
	u, err := p.store.Interrupt(t.Context(), p.session(tok))
	switch {
	case err != nil:
		t.Fatal(err)
	case want && (u.Interrupt != nil || u.Count != 0):
		t.Fatalf("after %s the interrupt is unread: %+v", what, u)
	case !want && u.Interrupt == nil:
		t.Fatalf("after %s the interrupt counts as read: %+v", what, u)
	}
}
