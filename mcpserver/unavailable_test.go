package mcpserver_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An aipm serve that cannot open its project, or cannot read the credential
// it was told to hold, still speaks MCP (mcpserver.Unavailable): at every
// revision the SDK's client completes initialize over real stdio to the
// built binary, lists exactly the tools a working server lists, and every
// tool call (authenticate, help, a gated tool, an unknown one) answers the
// tool error server_unavailable with why and the fix. The reason is on
// stderr once, and the server exits 0 when the client closes its stdin.
func TestUnavailableServer(t *testing.T) {
	p := newProject(t)
	outside := t.TempDir() // no .ai-pm here or above
	cases := []struct {
		name string
		dir  string   // the working directory the client starts serve in
		args []string // after the binary
		env  []string
		want []string // in the error text
	}{
		{"outside a project", outside, []string{"serve"}, nil,
			[]string{"no aipm project: no .ai-pm in " + outside, "start the client in the project's directory", "aipm --dir PATH serve", "AIPM_DIR", "aipm init"}},
		{"--dir names no project", outside, []string{"--dir", outside, "serve"}, nil,
			[]string{outside + " has no .ai-pm directory", "aipm init"}},
		{"AIPM_PASSKEY_FILE is missing", p.store.ProjectDir(), []string{"serve"},
			[]string{"AIPM_AGENT_ID=coder", "AIPM_PASSKEY_FILE=" + filepath.Join(outside, "coder.key")},
			[]string{"AIPM_PASSKEY_FILE: stat ", "no such file", "aipm agent passkey coder --save"}},
		{"serve --agent with no saved passkey", p.store.ProjectDir(), []string{"serve", "--agent", "coder"}, nil,
			[]string{"coder has no saved passkey on this machine", "aipm agent passkey coder --save"}},
	}
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			working, err := p.connect(rev).ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			wantTools, _ := json.Marshal(working.Tools)
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					rc := newResultChecker(t, rev)
					cmd := exec.Command(aipmBin, tc.args...)
					cmd.Dir = tc.dir
					cmd.Env = append(cmd.Environ(), append([]string{"AIPM_DIR=", "AIPM_AGENT_ID=", "AIPM_PASSKEY=", "AIPM_PASSKEY_FILE="}, tc.env...)...)
					stderr := &logTail{}
					cmd.Stderr = stderr
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					cs, err := rc.client().Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: rev})
					if err != nil {
						t.Fatalf("initialize: %v", err)
					}
					if got := cs.InitializeResult().ProtocolVersion; got != rev {
						t.Errorf("negotiated %s, want %s", got, rev)
					}
					listed, err := cs.ListTools(ctx, nil)
					if err != nil {
						t.Fatal(err)
					}
					if got, _ := json.Marshal(listed.Tools); string(got) != string(wantTools) {
						t.Errorf("tools/list differs from a working server's:\n%s\nwant\n%s", got, wantTools)
					}
					var why string
					for _, c := range []struct {
						tool string
						args map[string]any
					}{
						{"authenticate", map[string]any{"agent_id": "coder"}},
						{"authenticate", map[string]any{"agent_id": "coder", "passkey": p.passkeys["coder"]}},
						{"help", map[string]any{}},
						{"get_next_action", map[string]any{"session_token": "whatever"}},
						{"no_such_tool", map[string]any{}},
					} {
						r := call(t, cs, c.tool, c.args)
						if r.code() != "server_unavailable" {
							t.Fatalf("%s: got %q, want server_unavailable", c.tool, r.text)
						}
						if why == "" {
							why = strings.TrimPrefix(r.text, "server_unavailable: ")
						} else if r.text != "server_unavailable: "+why {
							t.Errorf("%s: %q, not the same reason %q", c.tool, r.text, why)
						}
					}
					for _, w := range tc.want {
						if !strings.Contains(why, w) {
							t.Errorf("the reason %q does not say %q", why, w)
						}
					}
					if strings.Count(why, ": ") < 1 || strings.Contains(why, "\n") {
						t.Errorf("the reason is not one sentence of what and the fix: %q", why)
					}
					if !strings.Contains(cs.InitializeResult().Instructions, why) {
						t.Errorf("the instructions do not say why: %q", cs.InitializeResult().Instructions)
					}
					if err := cs.Close(); err != nil {
						t.Errorf("the server did not exit 0 when its stdin closed: %v", err)
					}
					if n := stderr.count(why); n != 1 {
						t.Errorf("stderr holds the reason %d times, want once", n)
					}
				})
			}
		})
	}
}
