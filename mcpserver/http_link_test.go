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
	rtok := p.authenticateHTTP(reviewer, "reviewer", fsstore.PurposeChat)

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

	// The batch's answer cut mid-write with a parallel call of the same
	// session on another connection while the answer is on its way (a
	// client's parallel tool calls): that call must not count the batch as
	// read before its answer is out. Then alone.
	const n = 100 // get_pending_messages' largest page
	readJSON := p.store.Root() + "/agents/reviewer/read.json"
	for _, parallel := range []bool{true, false} {
		for i := range n {
			p.send("coder", "reviewer", fmt.Sprintf("%03d %s", i, strings.Repeat("x", fsstore.MaxContent-8)))
		}
		comesAgain := srv.stderr.count("its batch comes again")
		cut(callBody(fmt.Sprintf(`{"session_token":%q,"limit":%d}`, rtok, n)), func() {
			// Cut once the batch is handed (read.json names it pending).
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				data, _ := os.ReadFile(readJSON)
				if strings.Contains(string(data), `"pending"`) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the batch was never handed: %s", data)
				}
			}
			if parallel {
				if r := call(t, reviewer, "list_tasks", map[string]any{"session_token": rtok}); r.isError {
					t.Fatalf("the parallel call: %s", r.text)
				}
			}
		})
		srv.stderr.waitFor(t, "its batch comes again", comesAgain+1)

		r := call(t, reviewer, "get_pending_messages", map[string]any{"session_token": rtok, "limit": n})
		msgs, _ := r.data["pending_messages"].([]any)
		if r.isError || len(msgs) != n {
			t.Fatalf("after the cut (parallel call: %v): %d messages, want %d: %.300s", parallel, len(msgs), n, r.text)
		}
		for i, m := range msgs {
			mm := m.(map[string]any)
			if !strings.HasPrefix(mm["content"].(string), fmt.Sprintf("%03d ", i)) || mm["redelivered"] != true {
				t.Fatalf("message %d after the cut (parallel call: %v): %.40v redelivered=%v", i, parallel, mm["content"], mm["redelivered"])
			}
		}
	}
}
