package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// Both protocol generations, through the real binary over stdio.
func TestServeProtocolVersions(t *testing.T) {
	for _, version := range revisions {
		t.Run(version, func(t *testing.T) {
			p := newProject(t)
			task := p.taskInProgress("coder", "write the parser")
			cs := p.connect(version)
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Fatalf("negotiated %s, want %s", got, version)
			}
			r := call(t, cs, "authenticate", map[string]any{"agent_id": "coder", "passkey": p.passkeys["coder"]})
			if r.isError || r.str("purpose") != "task" || r.str("task_id") != task.ID {
				t.Fatalf("authenticate: %s", r.text)
			}
			r = call(t, cs, "get_next_action", map[string]any{"session_token": r.str("session_token")})
			if r.str("action") != "work" || !strings.Contains(r.text, "notifications: none") {
				t.Fatalf("get_next_action: %s", r.text)
			}
		})
	}
}

// An agent authenticates with its credential in the server's environment
// only: no passkey argument, and the passkey in no argument or result.
func TestCredentialFromEnvironment(t *testing.T) {
	p := newProject(t)
	keyFile := filepath.Join(t.TempDir(), "coder.key")
	if err := os.WriteFile(keyFile, []byte(p.passkeys["coder"]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, env := range map[string][]string{
		"AIPM_PASSKEY_FILE": {"AIPM_AGENT_ID=coder", "AIPM_PASSKEY_FILE=" + keyFile},
		"AIPM_PASSKEY":      {"AIPM_AGENT_ID=coder", "AIPM_PASSKEY=" + p.passkeys["coder"]},
	} {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var wire bytes.Buffer // every argument and result of the session
			client := mcp.NewClient(&mcp.Implementation{Name: "env-test", Version: "1"}, nil)
			client.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					res, err := next(ctx, method, req)
					a, _ := json.Marshal(req.GetParams())
					r, _ := json.Marshal(res)
					mu.Lock()
					wire.Write(a)
					wire.Write(r)
					mu.Unlock()
					return res, err
				}
			})
			cs := p.connectClient(client, "", env, os.Stderr)
			if err := p.store.Triggers().Write(context.Background(), fsstore.Trigger{Agent: "coder", Purpose: "chat", Reason: "test"}); err != nil {
				t.Fatal(err)
			}
			r := call(t, cs, "authenticate", map[string]any{"agent_id": "coder"})
			if r.isError || r.str("session_token") == "" {
				t.Fatalf("authenticate(agent_id) with the credential in the environment: %s", r.text)
			}
			if r := call(t, cs, "get_next_action", map[string]any{"session_token": r.str("session_token"), "wait_seconds": 1}); r.isError {
				t.Fatalf("get_next_action: %s", r.text)
			}
			// The next case's trigger finds no live chat session to skip.
			if r := call(t, cs, "logout", map[string]any{"session_token": r.str("session_token")}); r.isError {
				t.Fatalf("logout: %s", r.text)
			}
			// The credential is the server's agent's only.
			if r := call(t, cs, "authenticate", map[string]any{"agent_id": "reviewer"}); r.code() != "passkey_required" {
				t.Errorf("authenticate(reviewer) without a passkey: %s", r.text)
			}
			mu.Lock()
			defer mu.Unlock()
			if bytes.Contains(wire.Bytes(), []byte(p.passkeys["coder"])) {
				t.Error("the passkey appeared in a tool argument or result")
			}
		})
	}
	// Without a credential in the environment, a passkey is required.
	cs := p.connect("")
	if r := call(t, cs, "authenticate", map[string]any{"agent_id": "coder"}); r.code() != "passkey_required" || len(r.text) > 400 {
		t.Errorf("authenticate without passkey or credential: %s", r.text)
	}
}
