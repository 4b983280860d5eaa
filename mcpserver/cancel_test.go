package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
	"aipm/mcpserver"
)

// A call the client cancels (notifications/cancelled, which the TypeScript
// SDK also sends when a request of its times out) gets no response at all,
// as the cancellation utility says: a client has forgotten the id by then,
// and both TypeScript SDKs report a response to it as one for an unknown
// message id. Here get_next_action waits for something to happen, the
// client cancels it, and nothing with its id comes back; the session goes
// on. At every revision the real clients speak, with raw frames.
func TestCancelledCallGetsNoResponse(t *testing.T) {
	for _, version := range revisions {
		t.Run(version, func(t *testing.T) {
			p := newProject(t)
			rs := p.startRawAt(version)
			token := rs.authenticate(p, "coder", fsstore.PurposeChat)

			rs.call(`7`, "tools/call", map[string]any{"name": "get_next_action", "arguments": map[string]any{"session_token": token, "wait_seconds": 20}})
			// A chat session with nothing to do waits: nothing is answered
			// before the cancellation.
			if m, ok := rs.next(300 * time.Millisecond); ok {
				t.Fatalf("get_next_action did not wait: %v", m)
			}
			rs.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"timeout"}}`)
			// The session goes on: the next call is answered. (A tool call,
			// not a ping: 2026-07-28 has no ping.)
			rs.call(`"after"`, "tools/call", map[string]any{"name": "help", "arguments": map[string]any{"session_token": token}})
			reply, frames := rs.collect(`"after"`)
			if res, _ := reply["result"].(map[string]any); res == nil || res["isError"] == true {
				t.Fatalf("help after the cancellation: %v", reply)
			}
			// A late answer would come at once (the wait ends when the call is
			// cancelled): read for a while more.
			for {
				m, ok := rs.next(500 * time.Millisecond)
				if !ok {
					break
				}
				frames = append(frames, m)
			}
			for _, m := range frames {
				if id, _ := json.Marshal(m["id"]); string(id) == "7" {
					t.Errorf("the cancelled call was answered: %v", m)
				}
			}
		})
	}
}

// The go-sdk client's own timeout: the call ends with the context's error,
// the client tells the server it cancelled it, no answer to it arrives,
// and the next call on the session succeeds.
func TestClientTimeoutLeavesSessionUsable(t *testing.T) {
	for _, version := range revisions {
		t.Run(version, func(t *testing.T) {
			p := newProject(t)
			wire := &wireLog{}
			cmd := exec.Command(aipmBin, "--dir", p.store.ProjectDir(), "serve")
			cmd.Stderr = os.Stderr
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: "aipm-test", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.LoggingTransport{Transport: &mcp.CommandTransport{Command: cmd}, Writer: wire}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatalf("connect (protocol %s): %v", version, err)
			}
			t.Cleanup(func() { cs.Close() })
			token := p.authenticate(cs, "coder", fsstore.PurposeChat)

			callCtx, stop := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer stop()
			res, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "get_next_action", Arguments: map[string]any{"session_token": token, "wait_seconds": 20}})
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("get_next_action past the client's timeout: %v, %v; want the context's error", res, err)
			}
			if r := call(t, cs, "help", map[string]any{"session_token": token}); r.isError {
				t.Fatalf("help after the timeout: %s", r.text)
			}

			id := wire.requestID(t, "get_next_action")
			// The client sends notifications/cancelled in the background.
			for deadline := time.Now().Add(10 * time.Second); !wire.cancelled(id); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the client sent no notifications/cancelled for request %s", id)
				}
			}
			time.Sleep(500 * time.Millisecond) // for an answer the server would send late
			for _, m := range wire.frames("read") {
				if string(m.ID) == id {
					t.Errorf("the cancelled call was answered: %s", m.raw)
				}
			}
		})
	}
}

// The gate ends a cancelled call with the cancellation, not a result: the
// tool's ctx.Err() is not made an error result with a notification line.
// (The SDK would drop that result anyway; this is what the gate returns,
// seen by a middleware around it, in process.)
func TestGateCancelledCallIsNoResult(t *testing.T) {
	for _, version := range revisions {
		t.Run(version, func(t *testing.T) {
			p := newProject(t)
			srv := mcpserver.New(p.store, slog.New(slog.NewTextHandler(io.Discard, nil)), "test").MCP()
			type outcome struct {
				res mcp.Result
				err error
			}
			got := make(chan outcome, 1)
			srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler { // around the gate
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					res, err := next(ctx, method, req)
					if call, ok := req.(*mcp.CallToolRequest); ok && call.Params.Name == "get_next_action" {
						got <- outcome{res, err}
					}
					return res, err
				}
			})
			ctx := context.Background()
			st, ct := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(ctx, st, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ss.Close() })
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "aipm-test", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			token := p.authenticate(cs, "coder", fsstore.PurposeChat)

			callCtx, stop := context.WithTimeout(ctx, 300*time.Millisecond)
			defer stop()
			if _, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "get_next_action", Arguments: map[string]any{"session_token": token, "wait_seconds": 20}}); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("get_next_action past the client's timeout: %v; want the context's error", err)
			}
			select {
			case o := <-got:
				if o.res != nil || !errors.Is(o.err, context.Canceled) {
					t.Errorf("the gate returned %#v, %v for the cancelled call; want no result and context.Canceled", o.res, o.err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("get_next_action went on after the client cancelled it")
			}
		})
	}
}

// authenticate opens a session of the given purpose with raw frames, as
// project.authenticate does with an SDK client, and returns its token.
func (rs *rawServer) authenticate(p *project, agent, purpose string) string {
	rs.t.Helper()
	if err := p.store.Triggers().Write(context.Background(), fsstore.Trigger{Agent: agent, Purpose: purpose, Reason: "test"}); err != nil {
		rs.t.Fatal(err)
	}
	rs.call(`"auth"`, "tools/call", map[string]any{"name": "authenticate", "arguments": map[string]any{"agent_id": agent, "passkey": p.passkeys[agent], "purpose": purpose}})
	reply := rs.until(`"auth"`)
	res, _ := reply["result"].(map[string]any)
	data, _ := res["structuredContent"].(map[string]any)
	token, _ := data["session_token"].(string)
	if token == "" || res["isError"] == true {
		rs.t.Fatalf("authenticate %s for %s: %v", agent, purpose, reply)
	}
	return token
}

// next is the next frame the server writes within d; false if none comes.
func (rs *rawServer) next(d time.Duration) (map[string]any, bool) {
	rs.t.Helper()
	select {
	case line, ok := <-rs.lines:
		if !ok {
			rs.t.Fatal("aipm serve closed stdout")
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			rs.t.Fatalf("reply is not JSON: %.200q", line)
		}
		return m, true
	case <-time.After(d):
		return nil, false
	}
}

// wireLog is what a mcp.LoggingTransport writes: a line for each message
// the client wrote ("write: ") or read ("read: ").
type wireLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *wireLog) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(b)
}

type wireFrame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string          `json:"name"`
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
	raw string
}

// frames are the messages logged in direction ("read" or "write").
func (w *wireLog) frames(direction string) []wireFrame {
	w.mu.Lock()
	text := w.buf.String()
	w.mu.Unlock()
	var frames []wireFrame
	for line := range strings.Lines(text) {
		data, ok := strings.CutPrefix(strings.TrimSpace(line), direction+": ")
		if !ok {
			continue
		}
		var f wireFrame
		if json.Unmarshal([]byte(data), &f) == nil {
			f.raw = data
			frames = append(frames, f)
		}
	}
	return frames
}

// requestID is the id (raw JSON) of the client's one call of tool.
func (w *wireLog) requestID(t *testing.T, tool string) string {
	t.Helper()
	var ids []string
	for _, f := range w.frames("write") {
		if f.Method == "tools/call" && f.Params.Name == tool {
			ids = append(ids, string(f.ID))
		}
	}
	if len(ids) != 1 {
		t.Fatalf("%d calls of %s on the wire, want 1", len(ids), tool)
	}
	return ids[0]
}

// cancelled reports whether the client wrote notifications/cancelled for
// the request id.
func (w *wireLog) cancelled(id string) bool {
	for _, f := range w.frames("write") {
		if f.Method == "notifications/cancelled" && string(f.Params.RequestID) == id {
			return true
		}
	}
	return false
}
