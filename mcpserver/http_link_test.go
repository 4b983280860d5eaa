package mcpserver_test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

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

	// A raw MCP session, and the call on a connection of its own.
	client := &http.Client{}
	auth := map[string]string{"Authorization": "Bearer " + p.passkeys["reviewer"]}
	resp, _ := post(t, client, srv.url, initBody, auth)
	session := resp.Header.Get("Mcp-Session-Id")
	hdr := map[string]string{"Authorization": auth["Authorization"], "Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-06-18"}
	post(t, client, srv.url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr)

	cut := func(body string, after func()) {
		d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
			return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		}}
		conn, err := d.Dial("tcp", strings.TrimPrefix(strings.TrimSuffix(srv.url, "/mcp"), "http://"))
		if err != nil {
			t.Fatal(err)
		}
		var req strings.Builder
		fmt.Fprintf(&req, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n", conn.RemoteAddr(), len(body))
		for k, v := range hdr {
			fmt.Fprintf(&req, "%s: %s\r\n", k, v)
		}
		req.WriteString("\r\n" + body)
		if _, err := conn.Write([]byte(req.String())); err != nil {
			t.Fatal(err)
		}
		after()
		conn.(*net.TCPConn).SetLinger(0) // a reset, as a cable pulled or a process killed
		conn.Close()
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
	for _, parallel := range []string{"list_tasks", "get_pending_messages", ""} {
		// The session's last batch read (any call reads it), so that the
		// pending batch awaited below is the new one.
		call(t, reviewer, "list_tasks", map[string]any{"session_token": rtok})
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
