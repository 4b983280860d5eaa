package mcpserver_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
	"aipm/internal/sshtest"
	"aipm/internal/testenv"
	"aipm/mcpserver"
)

// startSSHD starts a loopback sshd for the test (skipped, saying why,
// when the ssh programs are missing); its sessions check schemas as every
// server of these tests does.
func startSSHD(t *testing.T) *sshtest.Server {
	t.Helper()
	if why := sshtest.Missing(); why != "" {
		testenv.SkipMissing(t, why)
	}
	srv, err := sshtest.Start(context.Background(), t.TempDir(), mcpserver.EnvCheckSchemas+"=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// sshServe is the command an agent on another machine runs: ssh to home,
// aipm serve there holding agent's saved passkey. remoteEnv is set there
// (env K=V ...).
func (p *project) sshServe(srv *sshtest.Server, agent string, remoteEnv ...string) *exec.Cmd {
	p.t.Helper()
	if _, err := p.store.SaveCredential(agent, p.passkeys[agent]); err != nil {
		p.t.Fatal(err)
	}
	remote := append(append([]string{"env"}, remoteEnv...), aipmBin, "--dir", p.store.ProjectDir(), "serve", "--agent", agent)
	argv := srv.Command("home", remote...)
	return exec.Command(argv[0], argv[1:]...)
}

// connectSSH connects an SDK client through cmd (sshServe).
func (p *project) connectSSH(cmd *exec.Cmd, protocol string, stderr io.Writer) *mcp.ClientSession {
	p.t.Helper()
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "aipm-ssh-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		p.t.Fatalf("connect over ssh (protocol %s): %v", protocol, err)
	}
	p.t.Cleanup(func() { cs.Close() })
	return cs
}

// authenticateHeld opens a session of purpose with the credential the
// server holds: agent_id only, no passkey.
func (p *project) authenticateHeld(cs *mcp.ClientSession, agent, purpose string) string {
	p.t.Helper()
	if err := p.store.Triggers().Write(context.Background(), fsstore.Trigger{Agent: agent, Purpose: purpose, Reason: "test"}); err != nil {
		p.t.Fatal(err)
	}
	r := call(p.t, cs, "authenticate", map[string]any{"agent_id": agent, "purpose": purpose})
	if r.isError || r.str("purpose") != purpose {
		p.t.Fatalf("authenticate %s for %s with the held credential: %s", agent, purpose, r.text)
	}
	return r.str("session_token")
}

// session is the session document of the token's session.
func (p *project) session(token string) fsstore.Session {
	p.t.Helper()
	id, _, _ := strings.Cut(token, ".")
	var ses fsstore.Session
	p.doc(p.t, fsstore.Sessions, id, &ses)
	return ses
}

func alive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }

// waitUntil polls cond every 20 ms for at most bound.
func waitUntil(t *testing.T, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", bound, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Over ssh, at each protocol: two agents on "another machine" reach the
// home's aipm serve through sshd, with the passkeys saved on the home
// (serve --agent: authenticate needs no passkey); the session records the
// ssh client; a message sent over one link wakes the other's waiting
// get_next_action and is read there.
func TestSSHServe(t *testing.T) {
	srv := startSSHD(t)
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			p := newProject(t)
			waiting := &lineWatch{want: "msg=waiting", seen: make(chan struct{})}
			coder := p.connectSSH(p.sshServe(srv, "coder"), rev, os.Stderr)
			reviewer := p.connectSSH(p.sshServe(srv, "reviewer", "AIPM_LOG=debug"), rev, waiting)
			if got := reviewer.InitializeResult().ProtocolVersion; got != rev {
				t.Fatalf("negotiated %s over ssh, want %s", got, rev)
			}
			ctok := p.authenticateHeld(coder, "coder", "chat")
			rtok := p.authenticateHeld(reviewer, "reviewer", "chat")
			if ses := p.session(rtok); !strings.HasPrefix(ses.SSHClient, "127.0.0.1:") || ses.RunID != "" {
				t.Fatalf("a session opened over ssh records sshClient %q, runId %q", ses.SSHClient, ses.RunID)
			}
			status, err := exec.Command(aipmBin, "--dir", p.store.ProjectDir(), "status").CombinedOutput()
			if err != nil || !regexp.MustCompile(`(?m)^reviewer +ai +chat via ssh from 127\.0\.0\.1:\d+ `).Match(status) {
				t.Fatalf("aipm status does not show the remote session: %v\n%s", err, status)
			}
			woken := make(chan result, 1)
			go func() {
				woken <- call(t, reviewer, "get_next_action", map[string]any{"session_token": rtok, "wait_seconds": 40})
			}()
			select {
			case <-waiting.seen:
			case <-time.After(30 * time.Second):
				t.Fatal("the remote get_next_action never waited")
			}
			start := time.Now()
			if r := call(t, coder, "send_message", map[string]any{"session_token": ctok, "target_agent_id": "reviewer", "content": "over the link"}); r.isError {
				t.Fatalf("send_message over ssh: %s", r.text)
			}
			r := <-woken
			if r.isError || r.str("action") != "get_pending_messages" {
				t.Fatalf("the waiting get_next_action answered %s", r.text)
			}
			t.Logf("woken %v after the send", time.Since(start).Round(time.Millisecond))
			got := call(t, reviewer, "get_pending_messages", map[string]any{"session_token": rtok})
			msgs, _ := got.data["pending_messages"].([]any)
			if len(msgs) != 1 || msgs[0].(map[string]any)["content"] != "over the link" || msgs[0].(map[string]any)["sender_id"] != "coder" {
				t.Fatalf("get_pending_messages over ssh: %s", got.text)
			}
		})
	}
}

// serve --agent with no saved passkey says why on stderr, naming the
// command that saves one (over ssh it reaches the client's stderr), and
// still speaks MCP, answering every call with it (mcpserver.Unavailable):
// with stdin closed at once, it ends as a serve does, exit 0.
func TestSSHServeWithoutSavedPasskey(t *testing.T) {
	srv := startSSHD(t)
	p := newProject(t)
	argv := srv.Command("home", aipmBin, "--dir", p.store.ProjectDir(), "serve", "--agent", "coder")
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "coder has no saved passkey on this machine (.ai-pm/credentials/coder.passkey): save one with aipm agent passkey coder --save") {
		t.Fatalf("serve --agent without a saved passkey: %v\n%s", err, out)
	}
}

// Eight agents, each through its own ssh and its own aipm serve on the
// home, send to three others each while all read their inboxes through
// get_pending_messages: every message is exactly once in the sender's file
// and once in the receiver's, none torn, and was received exactly once.
// 200 sends each; AIPM_LONG=1: 10,000 each (issue 26's 8 x 10,000).
func TestSSHManyAgents(t *testing.T) {
	srv := startSSHD(t)
	agents, perAgent := 8, 200
	if os.Getenv("AIPM_LONG") != "" {
		perAgent = 10000
	}
	p := newProject(t)
	p.addAIAgents(agents)
	clients := make([]chatClient, agents)
	for i := range clients {
		id := fmt.Sprintf("a%d", i)
		cs := p.connectSSH(p.sshServe(srv, id), "", os.Stderr)
		clients[i] = chatClient{cs: cs, token: p.authenticateHeld(cs, id, "chat")}
	}
	start := time.Now()
	sent, received := exchange(t, clients, perAgent)
	took := time.Since(start)
	checkExchange(t, p, agents, perAgent, sent, received)
	t.Logf("%d agents x %d sends over ssh: %d sent, %d received once each, 0 lost, 0 duplicated, 0 torn, in %v (%.0f sends/s)",
		agents, perAgent, len(sent), len(received), took.Round(time.Millisecond), float64(len(sent))/took.Seconds())
}

// The link cut mid-call loses nothing. A get_next_action waiting at the
// home when the ssh client is killed: the call fails at once, the home's
// aipm serve exits and ends its session (process_exited). A
// get_pending_messages whose link dies with the request in flight (ssh
// frozen, then killed): the batch the session read before is not
// acknowledged, so the next session gets it again marked redelivered,
// and what was sent meanwhile after it.
func TestSSHLinkCut(t *testing.T) {
	srv := startSSHD(t)
	p := newProject(t)
	// The home's serve: its pid is the session's, its end is checked.
	ended := func(token string) func() bool {
		ses := p.session(token)
		return func() bool {
			ses = p.session(token)
			return !alive(ses.PID) && ses.EndReason == fsstore.EndExited
		}
	}

	// 1. Killed while the home waits.
	waiting := &lineWatch{want: "msg=waiting", seen: make(chan struct{})}
	cmdA := p.sshServe(srv, "reviewer", "AIPM_LOG=debug")
	a := p.connectSSH(cmdA, "", waiting)
	tokA := p.authenticateHeld(a, "reviewer", "chat")
	failed := make(chan error, 1)
	go func() {
		_, err := a.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_next_action", Arguments: map[string]any{"session_token": tokA, "wait_seconds": 50}})
		failed <- err
	}()
	select {
	case <-waiting.seen:
	case <-time.After(30 * time.Second):
		t.Fatal("the remote get_next_action never waited")
	}
	cmdA.Process.Kill()
	select {
	case err := <-failed:
		if err == nil {
			t.Fatal("the cut call answered")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cut call still waits 10 s after ssh died")
	}
	waitUntil(t, 15*time.Second, "the home's aipm serve still runs, or its session is not ended", ended(tokA))

	// 2. Killed with a read in flight.
	p.send("lead", "reviewer", "one")
	cmdB := p.sshServe(srv, "reviewer")
	b := p.connectSSH(cmdB, "", os.Stderr)
	tokB := p.authenticateHeld(b, "reviewer", "chat")
	if got := msgs(call(t, b, "get_pending_messages", map[string]any{"session_token": tokB})); strings.Join(got, " ") != "one" {
		t.Fatalf("session B read %v, want one", got)
	}
	cmdB.Process.Signal(syscall.SIGSTOP) // the link freezes
	go func() {
		_, err := b.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_pending_messages", Arguments: map[string]any{"session_token": tokB}})
		failed <- err
	}()
	time.Sleep(100 * time.Millisecond) // the request in ssh's pipe (or not yet: it never arrives either way)
	cmdB.Process.Kill()
	select {
	case err := <-failed:
		if err == nil {
			t.Fatal("the cut read answered")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cut read still waits 10 s after ssh died")
	}
	waitUntil(t, 15*time.Second, "the home's aipm serve still runs, or its session is not ended", ended(tokB))
	p.send("lead", "reviewer", "two")
	c := p.connectSSH(p.sshServe(srv, "reviewer"), "", os.Stderr)
	tokC := p.authenticateHeld(c, "reviewer", "chat")
	if got := msgs(call(t, c, "get_pending_messages", map[string]any{"session_token": tokC})); strings.Join(got, " ") != "*one two" {
		t.Fatalf("the session after the cut read %v, want *one two (one redelivered)", got)
	}
	if got := msgs(call(t, c, "get_pending_messages", map[string]any{"session_token": tokC})); len(got) != 0 {
		t.Fatalf("read again after acknowledging: %v", got)
	}
}

// msgs are the contents of a get_pending_messages result, a redelivered
// one marked with *.
func msgs(r result) (out []string) {
	list, _ := r.data["pending_messages"].([]any)
	for _, m := range list {
		m := m.(map[string]any)
		s, _ := m["content"].(string)
		if m["redelivered"] == true {
			s = "*" + s
		}
		out = append(out, s)
	}
	return out
}

// The watcher starts an agent on another machine (its command: ssh hostB
// AGENT), and the agent there connects back with ssh home aipm serve
// --agent coder, where the watcher's AIPM_RUN_ID does not reach. When the
// watcher's ssh exits, the run's remote session ends (process_exited)
// although its home aipm serve and the agent on hostB still run: the run
// owns the remote session of its agent and purpose opened after it started
// (fsstore RunTable.endSessions).
func TestSSHWatcherStartedRemoteAgent(t *testing.T) {
	srv := startSSHD(t)
	p := newProject(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "responses.jsonl")
	// The fake agent on hostB: initialize, wait for the answer, then
	// initialized and authenticate with the held credential; then it
	// stays, as an agent that does not notice its parent is gone.
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fake-agent","version":"1"}}}` + "\n"
	rest := `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"authenticate","arguments":{"agent_id":"coder","purpose":"chat"}}}` + "\n"
	for name, text := range map[string]string{"init.jsonl": init, "rest.jsonl": rest} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	home := strings.Join(srv.Command("home", aipmBin, "--dir", p.store.ProjectDir(), "serve", "--agent", "coder"), " ")
	// sshd makes the agent's shell a session and process group leader;
	// once the watcher's ssh is killed it is no longer under sshd, so the
	// test ends its group itself.
	script := fmt.Sprintf(`echo $$ > %[1]s/agent.pid; (cat %[1]s/init.jsonl; until grep -q '"id":1' %[2]s; do sleep 0.05; done; cat %[1]s/rest.jsonl; exec sleep 3600) | %[3]s > %[2]s`, dir, out, home)
	if err := os.WriteFile(filepath.Join(dir, "agent.sh"), []byte(script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := p.store.SaveCredential("coder", p.passkeys["coder"]); err != nil {
		t.Fatal(err)
	}
	command := srv.Command("hostB", "sh", filepath.Join(dir, "agent.sh"))
	if _, _, err := p.store.SetAgent(context.Background(), "coder", fsstore.AgentChange{Command: &command}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if data, err := os.ReadFile(filepath.Join(dir, "agent.pid")); err == nil {
			var pid int
			if fmt.Sscan(string(data), &pid); pid > 1 {
				syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
	})
	p.watch(t)
	p.send("lead", "coder", "start over there")

	var run fsstore.Run
	var ses fsstore.Session
	waitUntil(t, 30*time.Second, "no remote session of coder's run", func() bool {
		if readDoc(filepath.Join(p.store.Root(), "runs", "coder.chat.json"), &run) != nil || run.PID == 0 {
			return false
		}
		live, _ := p.store.LiveSessions(time.Now())
		for _, s := range live {
			if s.Agent == "coder" && s.SSHClient != "" {
				ses = s
				return true
			}
		}
		return false
	})
	if ses.RunID != "" || ses.Purpose != fsstore.PurposeChat {
		t.Fatalf("the remote session: %+v", ses)
	}
	if err := syscall.Kill(run.PID, syscall.SIGKILL); err != nil { // the watcher's child: ssh hostB
		t.Fatal(err)
	}
	waitUntil(t, 20*time.Second, "the remote session of the ended run still lives", func() bool {
		// Ended, then swept away by the watcher (its process alive and
		// its idle timeout far: only an end removes it).
		var now fsstore.Session
		err := readDoc(filepath.Join(p.store.Root(), "sessions", ses.ID+".json"), &now)
		return errors.Is(err, os.ErrNotExist) || now.EndReason == fsstore.EndExited
	})
	if !alive(ses.PID) {
		t.Fatal("the home's aipm serve exited: the test did not reach the rule it tests")
	}
}
