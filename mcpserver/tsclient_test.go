package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"aipm/fsstore"
	"aipm/internal/testenv"
)

// tsClient is testdata/tsclient/client.mjs, the TypeScript SDK's client.
const tsClient = "../testdata/tsclient/client.mjs"

// tsOut is the JSON line client.mjs prints.
type tsOut struct {
	SDK       string            `json:"sdk"`
	Requested string            `json:"requested"`
	Protocol  string            `json:"protocol"`
	SessionID string            `json:"session_id"`
	Tools     []string          `json:"tools"`
	Calls     map[string]tsCall `json:"calls"`
	Error     string            `json:"error"`
	Status    int               `json:"status"`
}

// tsCall is one tool call as the TS client saw it.
type tsCall struct {
	IsError bool           `json:"isError"`
	Data    map[string]any `json:"structuredContent"`
	Text    string         `json:"text"`
}

func (c tsCall) str(k string) string { s, _ := c.Data[k].(string); return s }

// needTSClient skips t unless node and the client's node_modules are here.
func needTSClient(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		testenv.SkipMissing(t, "node on PATH (install Node.js >= 18, Debian: apt-get install nodejs) to run the TypeScript SDK client")
	}
	if _, err := os.Stat("../testdata/tsclient/node_modules/@modelcontextprotocol/sdk/package.json"); err != nil {
		testenv.SkipMissing(t, "testdata/tsclient/node_modules (run `npm ci --prefix testdata/tsclient` in the repository)")
	}
}

// runTS runs client.mjs (env: extra environment) and returns the line it
// printed, and whether it exited 0.
func runTS(t *testing.T, env []string, url, token, agent, protocol, target string) (tsOut, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", tsClient, url, token, agent, protocol, target)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var out tsOut
	if jerr := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out); jerr != nil {
		t.Fatalf("client.mjs printed no JSON line (%v, exit %v):\n%s\n%s", jerr, err, stdout.Bytes(), stderr.Bytes())
	}
	if err != nil && out.Error == "" {
		t.Fatalf("client.mjs failed (%v) and reported no error:\n%s\n%s", err, stdout.Bytes(), stderr.Bytes())
	}
	return out, err == nil
}

// The TypeScript SDK's client (StreamableHTTPClientTransport, bearer
// token) at each revision: initialize, tools/list, authenticate without a
// passkey, get_next_action, send_message, as the real clients see them
// (structuredContent). The SDK does not know 2026-07-28: asked for it in
// initialize, the server answers 2025-11-25, and that is where it runs.
func TestTSClientOverHTTP(t *testing.T) {
	testenv.SkipIfShort(t, "starts aipm serve --http and node")
	needTSClient(t)
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			p := newProject(t)
			srv := p.serveHTTP()
			want := rev
			if rev >= "2026-07-28" {
				want = "2025-11-25"
			}
			// The tools the go-sdk client lists over HTTP.
			res, err := p.connectHTTP(srv.url, "2025-11-25", p.passkeys["coder"], nil).ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var tools []string
			for _, tl := range res.Tools {
				tools = append(tools, tl.Name)
			}
			p.aipm(t, "send", "--as", "lead", "--to", "coder", "are you there")

			out, ok := runTS(t, nil, srv.url, p.passkeys["coder"], "coder", rev, "reviewer")
			if !ok {
				t.Fatalf("client.mjs at %s: %s (status %d)", rev, out.Error, out.Status)
			}
			checkTSRun(t, out, want, tools)
			p.holds(t, `"content":"from the TS SDK at `+rev+`"`, 1, "coder", "reviewer")
		})
	}

	// Why not 2026-07-28: sent as a 2026-07-28 client sends it (the
	// Mcp-Protocol-Version header from the first request), the SDK's
	// initialize reaches the sessionless handler, which wants SEP-2575's
	// per-request _meta that the SDK does not send.
	t.Run("2026-07-28 header", func(t *testing.T) {
		p := newProject(t)
		srv := p.serveHTTP()
		out, ok := runTS(t, []string{"AIPM_TS_HEADER=1"}, srv.url, p.passkeys["coder"], "coder", "2026-07-28", "reviewer")
		if ok || out.Status != 400 || !strings.Contains(out.Error, "_meta") {
			t.Fatalf("the SDK's initialize on the sessionless handler: ok %v, status %d, %s", ok, out.Status, out.Error)
		}
	})

	// A wrong token: the SDK reports the 401 and aipm's sentence; nothing
	// under .ai-pm changes.
	t.Run("wrong token", func(t *testing.T) {
		p := newProject(t)
		srv := p.serveHTTP()
		before := p.tree()
		out, ok := runTS(t, nil, srv.url, "aipk_wrong", "coder", "2025-11-25", "reviewer")
		if ok || out.Status != 401 || !strings.Contains(out.Error, "no AI agent's passkey") {
			t.Fatalf("a wrong token: ok %v, status %d, %s", ok, out.Status, out.Error)
		}
		if after := p.tree(); after != before {
			t.Fatalf("a refused client changed .ai-pm:\n%s\n---\n%s", before, after)
		}
	})
}

// checkTSRun checks what client.mjs saw as the coder, with a message
// waiting: the protocol (want) in an MCP session, the tools aipm serves,
// and each call's structuredContent.
func checkTSRun(t *testing.T, out tsOut, want string, tools []string) {
	t.Helper()
	if out.Protocol != want || out.SessionID == "" {
		t.Errorf("asked for %s: negotiated %q, MCP session %q; want %s in an MCP session", out.Requested, out.Protocol, out.SessionID, want)
	}
	slices.Sort(tools)
	slices.Sort(out.Tools)
	if len(tools) < 20 || !slices.Equal(out.Tools, tools) {
		t.Errorf("the TS client listed %v\nthe go-sdk client %v", out.Tools, tools)
	}
	if a := out.Calls["authenticate"]; a.IsError || !strings.HasPrefix(a.str("session_token"), "ses_") || a.str("purpose") != "chat" || a.str("agent_id") != "coder" {
		t.Errorf("authenticate: %+v", a)
	}
	if g := out.Calls["get_next_action"]; g.IsError || g.str("action") != "get_pending_messages" {
		t.Errorf("get_next_action with a message waiting: %+v", g)
	}
	if s := out.Calls["send_message"]; s.IsError || s.Data["success"] != true || s.str("target_agent_id") != "reviewer" || s.str("receiver_state") != "queued" {
		t.Errorf("send_message to an agent with no session: %+v", s)
	}
}

// The TypeScript SDK's client (Node's fetch) reading an inbox at a model's
// pace, 5 seconds between calls: each read passes the ack of the one
// before, which proves that answer read (links.go), so no message comes
// twice, whichever connection each call comes on (Node's fetch closes an
// idle connection after 4 seconds unless the server's Keep-Alive says
// otherwise).
func TestTSClientReadsOnce(t *testing.T) {
	testenv.SkipIfShort(t, "starts aipm serve --http and node, and waits 10 s")
	needTSClient(t)
	p := newProject(t)
	srv := p.serveHTTP()
	if err := p.store.Triggers().Write(context.Background(), fsstore.Trigger{Agent: "reviewer", Purpose: fsstore.PurposeChat, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	p.send("lead", "reviewer", "one")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "node", "../testdata/tsclient/reads.mjs", srv.url, p.passkeys["reviewer"], "reviewer", "5000").Output()
	if err != nil {
		t.Fatalf("reads.mjs: %v\n%s", err, out)
	}
	var got struct {
		Reads [][]string `json:"reads"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &got); err != nil || len(got.Reads) != 3 {
		t.Fatalf("reads.mjs printed %s (%v)", out, err)
	}
	if r := got.Reads; strings.Join(r[0], ",") != "one" || len(r[1])+len(r[2]) != 0 {
		t.Fatalf("the TS client's reads, 5 s apart: %v; want [one] [] []", r)
	}
}
