package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// The link cut mid-call: a client's TCP connection closes while the
// response of get_pending_messages is on its way (the client reads none
// of it; its receive buffer is small, so the server is still writing). The
// batch it was handed comes again on the session's next call, every
// message marked redelivered, none lost, also when a parallel call of the
// same session comes in meanwhile. A wait whose connection closes ends at
// once.
func TestHTTPLinkCutLosesNothing(t *testing.T) {
	p := newProject(t)
	srv := p.serveHTTP()
	reviewer := p.connectHTTP(srv.url, "2025-11-25", p.passkeys["reviewer"], nil)
	rtok := p.authenticateHeld(reviewer, "reviewer", fsstore.PurposeChat)

	raw := p.rawMCP(srv, "reviewer")
	cut := func(body string, after func()) {
		conn := raw.send(t, body, 4096) // a small receive buffer: the server is still writing
		after()
		reset(conn)
	}
	callBody := func(args string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_pending_messages","arguments":` + args + `}}`
	}

	// A wait whose connection goes away ends (the server says so at debug
	// level when a wait ends by its context).
	waits, ends := srv.stderr.count("msg=waiting"), srv.stderr.count("msg=\"wait ended\"")
	cut(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"get_next_action","arguments":{"session_token":"`+rtok+`","wait_seconds":40}}}`, func() {
		srv.stderr.waitFor(t, "msg=waiting", waits+1)
	})
	start := time.Now()
	srv.stderr.waitFor(t, "msg=\"wait ended\"", ends+1)
	if time.Since(start) > 5*time.Second {
		t.Fatalf("the wait ended %v after its connection closed", time.Since(start))
	}

	// The batch's answer cut mid-write: alone, and with a parallel call of
	// the same session on another connection while the answer is on its
	// way (a client's parallel tool calls). A parallel call must not count
	// the batch as read before its answer is out (list_tasks), and a
	// parallel read waits until the cut answer's batch is taken back, then
	// gets it (get_pending_messages).
	const n = 100 // get_pending_messages' largest page
	readJSON := p.store.Root() + "/agents/reviewer/read.json"
	pending := map[string]any{"session_token": rtok, "limit": n}
	ack := "" // of the last batch the session read
	for _, parallel := range []string{"list_tasks", "get_pending_messages", ""} {
		// The session's last batch acknowledged (a read passing its ack,
		// with nothing new to hand), so that the pending batch awaited
		// below is the new one.
		acked := map[string]any{"session_token": rtok}
		if ack != "" {
			acked["ack"] = ack
		}
		if got := msgs(call(t, reviewer, "get_pending_messages", acked)); len(got) != 0 {
			t.Fatalf("the read that acknowledges the last batch got %v", got)
		}
		if data, _ := os.ReadFile(readJSON); strings.Contains(string(data), `"pending"`) {
			t.Fatalf("a batch is still pending before the round: %s", data)
		}
		for i := range n {
			p.send("coder", "reviewer", fmt.Sprintf("%03d %s", i, strings.Repeat("x", fsstore.MaxContent-8)))
		}
		comesAgain, waiting := srv.stderr.count("its batch comes again"), srv.stderr.count("waiting for it")
		var read chan result
		cut(callBody(fmt.Sprintf(`{"session_token":%q,"limit":%d}`, rtok, n)), func() {
			waitHanded(t, readJSON) // cut once the batch is handed
			switch parallel {
			case "list_tasks":
				if r := call(t, reviewer, "list_tasks", map[string]any{"session_token": rtok}); r.isError {
					t.Fatalf("the parallel call: %s", r.text)
				}
			case "get_pending_messages":
				read = make(chan result, 1)
				go func() {
					r, err := tryCall(reviewer, "get_pending_messages", pending)
					if err != nil {
						r = result{isError: true, text: err.Error()}
					}
					read <- r
				}()
				srv.stderr.waitFor(t, "waiting for it", waiting+1) // in its claim, waiting for the cut request
			}
		})
		srv.stderr.waitFor(t, "its batch comes again", comesAgain+1)

		var r result
		if read != nil {
			r = <-read
		} else {
			r = call(t, reviewer, "get_pending_messages", pending)
		}
		allRedelivered(t, r, n, "after the cut (parallel "+parallel+")")
		ack = r.str("ack")
	}
}

// waitHanded returns once the agent's read.json names a pending batch.
func waitHanded(t *testing.T, readJSON string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		data, _ := os.ReadFile(readJSON)
		if strings.Contains(string(data), `"pending"`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the batch was never handed: %s", data)
		}
	}
}

// allRedelivered checks that r handed messages 000 to n-1, in order, each
// marked redelivered.
func allRedelivered(t *testing.T, r result, n int, what string) {
	t.Helper()
	msgs, _ := r.data["pending_messages"].([]any)
	if r.isError || len(msgs) != n {
		t.Fatalf("%s: %d messages, want %d: %.300s", what, len(msgs), n, r.text)
	}
	for i, m := range msgs {
		mm := m.(map[string]any)
		if !strings.HasPrefix(mm["content"].(string), fmt.Sprintf("%03d ", i)) || mm["redelivered"] != true {
			t.Fatalf("%s: message %d: %.40v redelivered=%v", what, i, mm["content"], mm["redelivered"])
		}
	}
}

// rawMCP is an MCP session opened by hand over HTTP, whose calls each go
// on a connection of their own, to be cut where a test says.
type rawMCP struct {
	addr string
	hdr  map[string]string
}

// rawMCP opens an MCP session with agent's passkey.
func (p *project) rawMCP(srv *httpServer, agent string) rawMCP {
	t := p.t.(*testing.T)
	client := &http.Client{}
	auth := map[string]string{"Authorization": "Bearer " + p.passkeys[agent]}
	resp, _ := post(t, client, srv.url, initBody, auth)
	if got := resp.Header.Get("Keep-Alive"); got != "timeout=115" {
		t.Fatalf("Keep-Alive %q: every answer says how long an idle connection stays (a little less than mcpserver.IdleTimeout)", got)
	}
	hdr := map[string]string{"Authorization": auth["Authorization"], "Mcp-Session-Id": resp.Header.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-06-18"}
	post(t, client, srv.url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr)
	return rawMCP{addr: strings.TrimPrefix(strings.TrimSuffix(srv.url, "/mcp"), "http://"), hdr: hdr}
}

// send posts body on a new connection (with a receive buffer of rcvbuf
// bytes, if not 0), and returns the connection to read the answer from.
func (m rawMCP) send(t testing.TB, body string, rcvbuf int) *net.TCPConn {
	d := net.Dialer{}
	if rcvbuf > 0 {
		d.Control = func(_, _ string, c syscall.RawConn) error {
			return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf) })
		}
	}
	conn, err := d.Dial("tcp", m.addr)
	if err != nil {
		t.Fatal(err)
	}
	var req strings.Builder
	fmt.Fprintf(&req, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: %d\r\n", m.addr, len(body))
	for k, v := range m.hdr {
		fmt.Fprintf(&req, "%s: %s\r\n", k, v)
	}
	req.WriteString("\r\n" + body)
	if _, err := conn.Write([]byte(req.String())); err != nil {
		t.Fatal(err)
	}
	return conn.(*net.TCPConn)
}

// cutAt posts body and reads k bytes of the answer once it has arrived
// (k 0: none), then runs during and resets the connection: a client that
// read the answer that far and went away. whole says the answer was
// shorter than k bytes (it was read to its end).
func (m rawMCP) cutAt(t testing.TB, body string, k int, during func()) (whole bool) {
	conn := m.send(t, body, 0)
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	buf := make([]byte, max(k, 1))
	if k == 0 {
		// Wait for the answer without taking a byte of it.
		rc, err := conn.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var n int
		var rerr error
		if err := rc.Read(func(fd uintptr) bool {
			n, _, rerr = syscall.Recvfrom(int(fd), buf, syscall.MSG_PEEK)
			return !errors.Is(rerr, syscall.EAGAIN)
		}); err != nil || rerr != nil || n == 0 {
			t.Fatalf("no answer came: %v %v", err, rerr)
		}
	} else if _, err := io.ReadFull(conn, buf[:k]); errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		whole = true
	} else if err != nil {
		t.Fatalf("reading byte %d of the answer: %v", k, err)
	}
	during()
	reset(conn)
	return whole
}

// reset closes conn with a TCP reset, as a cable pulled or a process
// killed.
func reset(conn *net.TCPConn) {
	conn.SetLinger(0)
	conn.Close()
}

// The client's read of an answer cut at every byte, the answer of
// get_pending_messages (a message), of get_notifications (an interrupt)
// and the interrupting answer that replaces a call: the client read k
// bytes and reset the connection, alone, or with a call of the same
// session on another connection meanwhile. Whatever k, nothing is lost:
// the next call (the SDK's, which passes no ack: it never read the cut
// answer) finds the message unread (get_next_action says
// get_pending_messages) or is replaced by the interrupt, and in the end
// both come again marked redelivered. Both sessions acknowledged an answer
// first, as a client that passes acks does: no number of answers that go
// out unacknowledged then counts as read (links.go, rule 5).
func TestHTTPCutAtEveryByte(t *testing.T) {
	p := newProject(t)
	setConfig(t, p, `durability = "fsync"`, `durability = "none"`) // thousands of calls: the rule is the link's, not the disk's
	srv := p.serveHTTP()
	task := p.taskInProgress("coder", "port the parser")
	reviewer := p.connectHTTP(srv.url, "2025-11-25", p.passkeys["reviewer"], nil)
	rtok := p.authenticateHeld(reviewer, "reviewer", fsstore.PurposeChat)
	coder := p.connectHTTP(srv.url, "2025-11-25", p.passkeys["coder"], nil)
	ctok := p.authenticateHeld(coder, "coder", fsstore.PurposeTask)
	p.send("lead", "reviewer", "first")
	if _, err := p.store.Notify(context.Background(), "coder", fsstore.Notification{Message: "first"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		cs        *mcp.ClientSession
		tok, tool string
	}{{reviewer, rtok, "get_pending_messages"}, {coder, ctok, "get_notifications"}} {
		r := call(t, s.cs, s.tool, map[string]any{"session_token": s.tok})
		if r.str("ack") == "" {
			t.Fatalf("%s hands no ack: %s", s.tool, r.text)
		}
		if r := call(t, s.cs, s.tool, map[string]any{"session_token": s.tok, "ack": r.str("ack")}); r.isError || r.str("ack") != "" {
			t.Fatalf("%s with the ack: %s", s.tool, r.text)
		}
	}
	p.send("lead", "reviewer", "cut me")
	if _, err := p.store.UpdateTask(context.Background(), p.cfg, task.ID, "lead", fsstore.TaskChange{Status: fsstore.StatusBlocked, Reason: "hold on"}); err != nil {
		t.Fatal(err)
	}
	callBody := func(tool string, args map[string]any) string {
		data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
		return string(data)
	}
	// cutEach cuts the answer to body at each byte, alone and with the
	// call beside, and checks the session's next call (next) each time.
	cutEach := func(t *testing.T, answer string, raw rawMCP, body string, beside func(*testing.T), next func(t *testing.T, what string)) {
		for _, besides := range []bool{false, true} {
			k := 0
			for ; ; k++ {
				whole := raw.cutAt(t, body, k, func() {
					if besides {
						beside(t)
					}
				})
				next(t, fmt.Sprintf("%s read to byte %d (a call beside: %v)", answer, k, besides))
				if whole {
					break
				}
			}
			t.Logf("%s cut at each of its %d bytes (a call beside: %v): nothing lost", answer, k, besides)
		}
	}
	// The two sessions at once: each one's calls follow each other.
	t.Run("chat", func(t *testing.T) {
		t.Parallel()
		unread := func(t *testing.T, what string) {
			if r := call(t, reviewer, "get_next_action", map[string]any{"session_token": rtok, "wait_seconds": 1}); r.str("action") != "get_pending_messages" {
				t.Fatalf("%s: the message is not unread: %s", what, r.text)
			}
		}
		listTasks := func(t *testing.T) { call(t, reviewer, "list_tasks", map[string]any{"session_token": rtok}) }
		cutEach(t, "get_pending_messages", p.rawMCP(srv, "reviewer"), callBody("get_pending_messages", map[string]any{"session_token": rtok}), listTasks, unread)
		if got := msgs(call(t, reviewer, "get_pending_messages", map[string]any{"session_token": rtok})); strings.Join(got, " ") != "*cut me" {
			t.Fatalf("the message in the end: %v, want it marked redelivered", got)
		}
	})
	t.Run("task", func(t *testing.T) {
		t.Parallel()
		interrupted := func(t *testing.T, what string) {
			if r := call(t, coder, "get_task", map[string]any{"session_token": ctok, "task_id": task.ID}); !strings.HasPrefix(r.text, "INTERRUPT (get_task did not run)") {
				t.Fatalf("%s: the interrupt did not replace the next call: %s", what, r.text)
			}
		}
		listTasks := func(t *testing.T) { call(t, coder, "list_tasks", map[string]any{"session_token": ctok}) }
		raw := p.rawMCP(srv, "coder")
		cutEach(t, "get_notifications", raw, callBody("get_notifications", map[string]any{"session_token": ctok}), listTasks, interrupted)
		cutEach(t, "the interrupting answer", raw, callBody("get_task", map[string]any{"session_token": ctok, "task_id": task.ID}), listTasks, interrupted)
		if ns := notes(call(t, coder, "get_notifications", map[string]any{"session_token": ctok})); len(ns) != 1 || ns[0]["type"] != "interrupt" || ns[0]["redelivered"] != true {
			t.Fatalf("the interrupt in the end: %v, want it marked redelivered", ns)
		}
	})
}

// mark_read is a proof on any link: a batch read through one HTTP client
// and marked read, by one of its ids, through another (on a connection of
// its own, which proves nothing by itself) is read; the next read gets
// nothing again.
func TestMarkReadProvesOverHTTP(t *testing.T) {
	p := newProject(t)
	srv := p.serveHTTP()
	reads := p.connectHTTP(srv.url, "2025-11-25", p.passkeys["reviewer"], nil)
	tok := p.authenticateHeld(reads, "reviewer", fsstore.PurposeChat)
	other := p.connectHTTP(srv.url, "2025-11-25", p.passkeys["reviewer"], nil)
	p.send("lead", "reviewer", "one")
	p.send("lead", "reviewer", "two")
	r := call(t, reads, "get_pending_messages", map[string]any{"session_token": tok})
	list, _ := r.data["pending_messages"].([]any)
	if len(list) != 2 {
		t.Fatalf("get_pending_messages: %s", r.text)
	}
	if r := call(t, other, "mark_read", map[string]any{"session_token": tok, "message_ids": []any{list[1].(map[string]any)["id"]}}); r.isError {
		t.Fatalf("mark_read: %s", r.text)
	}
	if r := call(t, other, "get_next_action", map[string]any{"session_token": tok, "wait_seconds": 1}); r.str("action") == "get_pending_messages" {
		t.Fatalf("after mark_read the batch came back: %s", r.text)
	}
	if got := msgs(call(t, other, "get_pending_messages", map[string]any{"session_token": tok})); len(got) != 0 {
		t.Fatalf("after mark_read: %v", got)
	}
	for _, m := range []string{"one", "two"} {
		if s := p.seen("reviewer")[m]; s.ReadVia != "mark_read" {
			t.Errorf("%s: %+v; want read via mark_read", m, s)
		}
	}
}
