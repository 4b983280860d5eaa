package mcpserver_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// rawServer is `aipm serve` driven by hand, one JSON-RPC line at a time,
// for what no SDK client would send.
type rawServer struct {
	t       *testing.T
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Reader
	lines   chan string
	version string // the protocol revision it was started at
}

func (p *project) startRaw(env ...string) *rawServer {
	p.t.Helper()
	return p.startRawAt("2025-06-18", env...)
}

// startRawAt starts aipm serve for a client of the protocol revision
// version: before 2026-07-28 the session is initialized; from 2026-07-28
// there is no initialize, and each call carries its revision in _meta (see
// rawServer.call).
func (p *project) startRawAt(version string, env ...string) *rawServer {
	t := p.t.(*testing.T)
	t.Helper()
	cmd := exec.Command(aipmBin, "--dir", p.store.ProjectDir(), "serve")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = io.Discard
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rs := &rawServer{t: t, cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20), lines: make(chan string, 64), version: version}
	go func() {
		defer close(rs.lines)
		for {
			line, err := rs.out.ReadString('\n')
			if line != "" {
				rs.lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	if version >= "2026-07-28" {
		return rs
	}
	rs.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if r := rs.until(`"init"`); r["error"] != nil {
		t.Fatalf("initialize: %v", r)
	}
	rs.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return rs
}

// call sends the request id (raw JSON) for method with params, which from
// 2026-07-28 carry the revision, the client and its capabilities in _meta,
// as every request of that revision does.
func (rs *rawServer) call(id, method string, params map[string]any) {
	rs.t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	if rs.version >= "2026-07-28" {
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    rs.version,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}
	}
	data, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method, "params": params})
	if err != nil {
		rs.t.Fatal(err)
	}
	rs.send(string(data))
}

func (rs *rawServer) send(line string) {
	rs.t.Helper()
	if _, err := io.WriteString(rs.in, line+"\n"); err != nil {
		rs.t.Fatalf("write: %v", err)
	}
}

// until reads replies until the one whose id is id (raw JSON), and returns
// it; the replies before it are kept in rs.before.
func (rs *rawServer) until(id string) map[string]any {
	rs.t.Helper()
	reply, _ := rs.collect(id)
	return reply
}

// collect returns the reply with the given id and every reply before it.
func (rs *rawServer) collect(id string) (map[string]any, []map[string]any) {
	rs.t.Helper()
	var before []map[string]any
	timeout := time.After(60 * time.Second)
	for {
		select {
		case line, ok := <-rs.lines:
			if !ok {
				rs.t.Fatalf("aipm serve closed stdout while we waited for reply %s", id)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				rs.t.Fatalf("reply is not JSON: %.200q", line)
			}
			raw, _ := json.Marshal(m["id"])
			if string(raw) == id {
				return m, before
			}
			before = append(before, m)
		case <-timeout:
			rs.t.Fatalf("no reply %s", id)
		}
	}
}

// frameCase is a malformed frame and what the server must answer.
type frameCase struct {
	name  string
	frame string
	code  int    // the JSON-RPC error code expected; 0: none
	id    string // the id the error carries (raw JSON)
	tool  string // for a tools/call that must fail as a tool: its error code
}

// check checks the replies the frame and the ping after it got.
func (tc frameCase) check(t *testing.T, replies []map[string]any) {
	t.Helper()
	var errs []map[string]any
	for _, m := range replies {
		if e, ok := m["error"].(map[string]any); ok {
			errs = append(errs, e)
			raw, _ := json.Marshal(m["id"])
			if tc.id != "" && string(raw) != tc.id {
				t.Errorf("error reply id = %s, want %s", raw, tc.id)
			}
			if tc.code > 0 || tc.code < -1 {
				if c, _ := e["code"].(float64); int(c) != tc.code {
					t.Errorf("error code = %v, want %d (%v)", e["code"], tc.code, e["message"])
				}
			}
		} else if tc.tool != "" {
			res, _ := m["result"].(map[string]any)
			content, _ := res["content"].([]any)
			text := ""
			if len(content) > 0 {
				text, _ = content[0].(map[string]any)["text"].(string)
			}
			if res["isError"] != true || !strings.HasPrefix(text, tc.tool+": ") {
				t.Errorf("tool result = %v, want error %s", m, tc.tool)
			}
		}
	}
	switch {
	case tc.code == 0 && len(errs) > 0:
		t.Errorf("unexpected error replies: %v", errs)
	case tc.code != 0 && len(errs) != 1:
		t.Errorf("%d error replies, want 1: %v", len(errs), replies)
	case tc.tool != "" && len(replies) != 1:
		t.Errorf("%d replies, want the tool's: %v", len(replies), replies)
	}
}

// The server outlives every malformed frame: each gets a JSON-RPC error
// where one can be addressed, and the next well-formed call is answered.
// It exits, with status 0, only when stdin closes.
func TestMalformedFrames(t *testing.T) {
	p := newProject(t)
	rs := p.startRaw()
	huge := `{"jsonrpc":"2.0","id":99,"method":"ping","params":{"x":"` + strings.Repeat("a", 17<<20) + `"}}`
	for i, tc := range []frameCase{
		{"garbage", "garbage", -32700, "null", ""},
		{"truncated object", `{"jsonrpc":"2.0","id":1,"method":`, -32700, "null", ""},
		{"trailing data", `{"jsonrpc":"2.0","id":2,"method":"ping"} x`, -32700, "null", ""},
		{"two values", `{"jsonrpc":"2.0","id":3,"method":"ping"}{"jsonrpc":"2.0","id":4,"method":"ping"}`, -32700, "null", ""},
		{"bare number", "42", -32600, "null", ""},
		{"bare string", `"ping"`, -32600, "null", ""},
		{"null", "null", -32600, "null", ""},
		{"true", "true", -32600, "null", ""},
		{"empty batch", "[]", -32600, "null", ""},
		{"batch", `[{"jsonrpc":"2.0","id":5,"method":"ping"}]`, -32600, "null", ""},
		{"wrong version", `{"jsonrpc":"1.0","id":6,"method":"ping"}`, -32600, "6", ""},
		{"no version", `{"id":7,"method":"ping"}`, -32600, "7", ""},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, "null", ""},
		{"array id", `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, -32600, "null", ""},
		{"empty object", `{}`, -32600, "null", ""},
		{"version only", `{"jsonrpc":"2.0"}`, -32600, "null", ""},
		{"number method", `{"jsonrpc":"2.0","id":8,"method":5}`, -32600, "8", ""},
		{"frame over 16 MiB", huge, -32600, "null", ""},
		{"unknown method", `{"jsonrpc":"2.0","id":9,"method":"no/such"}`, -32601, "9", ""},
		{"params not an object", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":"x"}`, -1, "10", ""},
		{"arguments not an object", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"help","arguments":"x"}}`, 0, "11", "invalid_arguments"},
		{"response to nothing", `{"jsonrpc":"2.0","id":12,"result":{}}`, 0, "", ""},
		{"unknown notification", `{"jsonrpc":"2.0","method":"notifications/nonsense"}`, 0, "", ""},
		{"empty line", "", 0, "", ""},
		{"blank line", "  \t ", 0, "", ""},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"tools/call\",\"params\":{\"name\":\"authenticate\",\"arguments\":{\"agent_id\":\"coder\",\"passkey\":\"\xff\xfe\"}}}", 0, "13", "content_invalid"},
		{"lone surrogate", `{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"authenticate","arguments":{"agent_id":"coder","passkey":"\ud800"}}}`, 0, "14", "content_invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs.t = t
			rs.send(tc.frame)
			var replies []map[string]any
			if tc.id != "" && tc.id != "null" {
				// The SDK answers calls concurrently: wait for this one by id.
				reply, before := rs.collect(tc.id)
				replies = append(before, reply)
			}
			ping := fmt.Sprintf(`"ping-%d"`, i)
			rs.send(`{"jsonrpc":"2.0","id":` + ping + `,"method":"ping"}`)
			reply, before := rs.collect(ping)
			if reply["error"] != nil {
				t.Fatalf("ping after the frame: %v", reply)
			}
			replies = append(replies, before...)
			tc.check(t, replies)
		})
	}
	rs.t = t
	rs.in.Close()
	done := make(chan error, 1)
	go func() { done <- rs.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("aipm serve after stdin closed: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("aipm serve did not exit after stdin closed")
	}
}
