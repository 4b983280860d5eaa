package mcpserver_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
	"aipm/internal/hookschema"
)

// A lease ends when its holder's process is gone (DESIGN section 18): the
// coder leases src/parser (ending with its session) and docs/guide.md
// (keep) through the lease tool of a real aipm serve, which is then
// SIGKILLed, so that nothing ends the session. At once, with no watcher
// and no sweep, every reader leaves the unkept lease out: the reviewer's
// hook lets its write through, aipm leases lists only the kept one, and
// the reviewer's own lease tool takes src/parser; the kept lease still
// denies docs/guide.md. The holder is served over stdio, by a shared
// serve --http (the process of many sessions: the reviewer's session on
// it dies with it), and over ssh (the home's aipm serve, killed there).
func TestLeaseEndsWithItsKilledServe(t *testing.T) {
	for _, link := range []string{"stdio", "http", "ssh"} {
		t.Run(link, func(t *testing.T) {
			p := newProject(t)
			holder := p.leaseHolder(t, link)
			for _, take := range []map[string]any{
				{"session_token": holder.token, "paths": []string{"src/parser"}, "reason": "rewriting the parser"},
				{"session_token": holder.token, "paths": []string{"docs/guide.md"}, "keep": true},
			} {
				if r := call(t, holder.cs, "lease", take); r.isError {
					t.Fatalf("lease %v: %s", take["paths"], r.text)
				}
			}
			parser, guide := filepath.Join(p.store.ProjectDir(), "src", "parser", "ast.go"), filepath.Join(p.store.ProjectDir(), "docs", "guide.md")
			if out := p.hookWrite(t, "reviewer", parser); !strings.Contains(out, "is leased exclusively by coder") {
				t.Fatalf("while the holder's serve runs, the reviewer's write of %s: %q, want it denied", parser, out)
			}

			holder.kill(t)
			if out := p.hookWrite(t, "reviewer", parser); out != "" {
				t.Errorf("the holder's serve killed, the reviewer's write of %s is still refused: %s", parser, out)
			}
			if out := p.hookWrite(t, "reviewer", guide); !strings.Contains(out, "is leased exclusively by coder") {
				t.Errorf("the kept lease no longer holds %s: %q", guide, out)
			}
			var listed []fsstore.Lease
			if err := json.Unmarshal([]byte(p.aipmOut(t, "leases", "--json")), &listed); err != nil || len(listed) != 1 || listed[0].Paths[0] != "docs/guide.md" {
				t.Errorf("aipm leases after the kill: %+v (%v), want only the kept lease on docs/guide.md", listed, err)
			}
			reviewer := p.connect("")
			rtok := p.authenticate(reviewer, "reviewer", fsstore.PurposeChat)
			if r := call(t, reviewer, "lease", map[string]any{"session_token": rtok, "paths": []string{"src/parser"}}); r.isError {
				t.Errorf("the reviewer's take of src/parser after the holder's serve died: %s", r.text)
			}
		})
	}
}

// leaseHolder is the coder's session on a real aipm serve reached over a
// link, and how to SIGKILL that serve.
type leaseHolder struct {
	cs    *mcp.ClientSession
	token string
	kill  func(t *testing.T)
}

// leaseHolder opens the coder's chat session through link (stdio, http or
// ssh): kill SIGKILLs the aipm serve that holds it and returns once that
// process is gone (exited, reaped or not).
func (p *project) leaseHolder(t *testing.T, link string) leaseHolder {
	switch link {
	case "stdio":
		srv := p.serveStdio(nil, nil)
		return leaseHolder{srv.cs, p.authenticate(srv.cs, "coder", fsstore.PurposeChat), func(t *testing.T) {
			srv.kill()
			waitUntil(t, 15*time.Second, "the killed aipm serve still runs", func() bool { return processGone(srv.cmd.Process.Pid) })
		}}
	case "http":
		srv := p.serveHTTP()
		rev := revisions[len(revisions)-1]
		coder := p.connectHTTP(srv.url, rev, p.passkeys["coder"], nil)
		shared := p.connectHTTP(srv.url, rev, p.passkeys["reviewer"], nil)
		rtok := p.authenticateHeld(shared, "reviewer", fsstore.PurposeChat)
		ctok := p.authenticateHeld(coder, "coder", fsstore.PurposeChat)
		return leaseHolder{coder, ctok, func(t *testing.T) {
			// The reviewer's lease on the same process is refused while it
			// runs: it holds the coder's session too.
			if r := call(t, shared, "lease", map[string]any{"session_token": rtok, "paths": []string{"src/parser/lexer.go"}}); !r.isError || !strings.HasPrefix(r.text, "lease_conflict") {
				t.Fatalf("the reviewer's take on the coder's serve --http: %s, want lease_conflict", r.text)
			}
			srv.cmd.Process.Kill()
			srv.cmd.Wait()
		}}
	default:
		sshd := startSSHD(t)
		cmd := p.sshServe(sshd, "coder")
		cs := p.connectSSH(cmd, "", os.Stderr)
		tok := p.authenticateHeld(cs, "coder", fsstore.PurposeChat)
		home := p.session(tok).PID // the home's aipm serve, sshd's child
		return leaseHolder{cs, tok, func(t *testing.T) {
			if err := syscall.Kill(home, syscall.SIGKILL); err != nil {
				t.Fatalf("kill the home's aipm serve (%d): %v", home, err)
			}
			waitUntil(t, 15*time.Second, "the home's killed aipm serve still runs", func() bool { return processGone(home) })
		}}
	}
}

// processGone says whether pid has exited: reaped, or a zombie.
func processGone(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// hookWrite runs agent's Claude Code PreToolUse hook for a Write of path
// (absolute), with agent's credential and no aipm session, and returns
// what it printed: "" lets the write run.
func (p *project) hookWrite(t *testing.T, agent, path string) string {
	t.Helper()
	in, _ := json.Marshal(map[string]any{
		"session_id": "cs-1", "transcript_path": filepath.Join(p.store.ProjectDir(), "t.jsonl"), "cwd": p.store.ProjectDir(),
		"hook_event_name": "PreToolUse", "tool_name": "Write", "tool_input": map[string]any{"file_path": path, "content": "x"},
	})
	cmd := exec.Command(aipmBin, "--dir", p.store.ProjectDir(), "hook", "--client", "claude")
	cmd.Env = append(os.Environ(), fsstore.EnvAgentID+"="+agent, fsstore.EnvPasskey+"="+p.passkeys[agent])
	cmd.Stdin = bytes.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil || errb.Len() > 0 {
		t.Fatalf("aipm hook PreToolUse Write %s: %v: %s", path, err, errb.String())
	}
	if err := hookschema.Check("../testdata/hooks", "claude", "PreToolUse", out.Bytes()); err != nil {
		t.Fatal(err)
	}
	return out.String()
}
