package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"aipm/fsstore"
	"aipm/hook"
	"aipm/internal/hookschema"
)

// runHook runs `aipm hook` as agent's client would, with event's stdin,
// and returns its stdout, checked against the client's documented shape.
func (p *project) runHook(client, agent, purpose, event, tool string) string {
	p.t.Helper()
	out, err := p.hook(client, agent, purpose, event, tool)
	if err != nil {
		p.t.Fatal(err)
	}
	return out
}

// hook is runHook for any goroutine: the failure is returned.
func (p *project) hook(client, agent, purpose, event, tool string) (string, error) {
	stdin := fmt.Sprintf(`{"session_id":"cs-1","transcript_path":"/tmp/t.jsonl","cwd":%q,"hook_event_name":%q,"tool_name":%q,"tool_input":{},"stop_hook_active":false,"turn_id":"t1"}`,
		p.store.ProjectDir(), event, tool)
	cmd := exec.Command(aipmBin, "--dir", p.store.ProjectDir(), "hook", "--client", client)
	cmd.Env = append(os.Environ(), fsstore.EnvAgentID+"="+agent, fsstore.EnvPasskey+"="+p.passkeys[agent], fsstore.EnvPurpose+"="+purpose)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("aipm hook %s %s: %v: %s", client, event, err, errb.String())
	}
	if errb.Len() > 0 {
		return "", fmt.Errorf("aipm hook %s %s wrote on stderr: %s", client, event, errb.String())
	}
	return out.String(), hookschema.Check("../testdata/hooks", client, event, out.Bytes())
}

// A notice is told once per session, whoever tells it first: a client
// hook, or the notification line of a tool response (DESIGN section 15).
// Real aipm serve and aipm hook processes, for both clients, at the three
// protocol revisions the clients speak.
func TestHooksAndToolResponsesTellOnce(t *testing.T) {
	for i, proto := range revisions {
		client := []string{"claude", "codex"}[i%2]
		t.Run(proto+"/"+client, func(t *testing.T) {
			p := newProject(t)
			cs := p.connect(proto)
			token := p.authenticate(cs, "coder", "chat")
			ctx := context.Background()
			post := func() string { return p.runHook(client, "coder", "chat", hook.PostToolUse, "Bash") }
			prompt := func() string { return p.runHook(client, "coder", "chat", hook.UserPromptSubmit, "") }
			stop := func() string { return p.runHook(client, "coder", "chat", hook.Stop, "") }
			line := func() string {
				return call(t, cs, "list_tasks", map[string]any{"session_token": token}).str("notification")
			}
			if got := post() + prompt() + stop(); got != "" {
				t.Fatalf("nothing new: hooks printed %q", got)
			}

			// messages: told by the first hook, never again
			p.send("lead", "coder", "first")
			p.send("lead", "coder", "second")
			if got := post(); !strings.Contains(got, "2 new messages for you (2 from lead)") {
				t.Fatalf("PostToolUse after two messages: %q", got)
			}
			if got := post() + prompt() + stop(); got != "" {
				t.Fatalf("told already: hooks printed %q", got)
			}
			// reading them is get_pending_messages': the hook took nothing
			r := call(t, cs, "get_pending_messages", map[string]any{"session_token": token})
			if got := r.text; !strings.Contains(got, "first") || !strings.Contains(got, "second") {
				t.Fatalf("get_pending_messages after the hooks: %s", got)
			}

			// a notification told by a hook is not repeated by the next tool response
			if _, err := p.store.Notify(ctx, "coder", fsstore.Notification{Message: "build is red"}); err != nil {
				t.Fatal(err)
			}
			if got := prompt(); !strings.Contains(got, `1 new notification (newest: \"build is red\")`) {
				t.Fatalf("UserPromptSubmit after a notification: %q", got)
			}
			if got := line(); got != "notifications: none new (1 unread, told before)" {
				t.Fatalf("tool response after the hook told it: %q", got)
			}
			// and one told by a tool response is not repeated by a hook
			if _, err := p.store.Notify(ctx, "coder", fsstore.Notification{Message: "deploy done"}); err != nil {
				t.Fatal(err)
			}
			if got := line(); got != "notifications: you have 2 notifications: call get_notifications" {
				t.Fatalf("tool response after a second notification: %q", got)
			}
			if got := post() + prompt() + stop(); got != "" {
				t.Fatalf("told by the tool response: hooks printed %q", got)
			}

			// Stop keeps the model working once for something new, then lets it end
			p.send("lead", "coder", "third")
			if got := stop(); !strings.Contains(got, `"decision":"block"`) || !strings.Contains(got, "1 new message for you (1 from lead)") {
				t.Fatalf("Stop with a new message: %q", got)
			}
			if got := stop() + post(); got != "" {
				t.Fatalf("Stop told it already: %q", got)
			}
			p.wantSeen("coder", map[string]string{"first": "hook PostToolUse, read", "second": "hook PostToolUse, read", "third": "hook Stop, unread"})
		})
	}
}

// wantSeen checks what aipm log --json says of the messages agent
// received: content -> "VIA, read" or "VIA, unread".
func (p *project) wantSeen(agent string, want map[string]string) {
	p.t.Helper()
	out, err := exec.Command(aipmBin, "--dir", p.store.ProjectDir(), "log", agent, "--json").Output()
	if err != nil {
		p.t.Fatalf("aipm log: %v", err)
	}
	var logged []struct {
		Content     string    `json:"content"`
		SurfacedVia string    `json:"surfacedVia"`
		SurfacedAt  time.Time `json:"surfacedAt"`
		ReadAt      time.Time `json:"readAt"`
	}
	if err := json.Unmarshal(out, &logged); err != nil {
		p.t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range logged {
		state := "unread"
		if !m.ReadAt.IsZero() {
			state = "read"
		}
		if !m.SurfacedAt.IsZero() || state == "read" {
			got[m.Content] = m.SurfacedVia + ", " + state
		}
	}
	if !reflect.DeepEqual(got, want) {
		p.t.Fatalf("aipm log %s: surfaced and read %v; want %v", agent, got, want)
	}
}

// PreToolUse refuses every tool but aipm's own while an interrupt waits for
// the task session, and only that session: the agent's chat session works on.
func TestHookPreToolUseRefusesWhileInterrupted(t *testing.T) {
	p := newProject(t)
	task := p.taskInProgress("coder", "Fix login")
	cs := p.connect("2026-07-28")
	token := p.authenticate(cs, "coder", "task")
	chat := p.connect("2025-06-18")
	p.authenticate(chat, "coder", "chat")
	for _, client := range []string{"claude", "codex"} {
		if got := p.runHook(client, "coder", "task", hook.PreToolUse, "Bash"); got != "" {
			t.Fatalf("%s: no interrupt, PreToolUse printed %q", client, got)
		}
	}
	if _, err := p.store.UpdateTask(context.Background(), p.cfg, task.ID, "lead", fsstore.TaskChange{Status: fsstore.StatusBlocked, Reason: "API changes"}); err != nil {
		t.Fatal(err)
	}
	for _, client := range []string{"claude", "codex"} {
		for _, tool := range []string{"Bash", "Edit", "apply_patch", "mcp__github__create_issue"} {
			got := p.runHook(client, "coder", "task", hook.PreToolUse, tool)
			if !strings.Contains(got, `"permissionDecision":"deny"`) || !strings.Contains(got, "report_completed(result=\\\"blocked\\\"") {
				t.Fatalf("%s %s while interrupted: %q", client, tool, got)
			}
		}
		if got := p.runHook(client, "coder", "task", hook.PreToolUse, "mcp__aipm__report_completed"); got != "" {
			t.Fatalf("%s: aipm's own tool refused: %q", client, got)
		}
		if got := p.runHook(client, "coder", "chat", hook.PreToolUse, "Bash"); got != "" {
			t.Fatalf("%s: the chat session was refused for the task's interrupt: %q", client, got)
		}
	}
	// the agent complies: the refusals end
	r := call(t, cs, "report_completed", map[string]any{"session_token": token, "result": "blocked", "summary": "stopped"})
	if r.isError {
		t.Fatal(r.text)
	}
	if got := p.runHook("claude", "coder", "task", hook.PreToolUse, "Bash"); got != "" {
		t.Fatalf("after report_completed: %q", got)
	}
}

// startWake starts agent's asyncRewake hook (aipm hook --wake) and, if
// waiting, returns once it holds its session's lock.
func (p *project) startWake(agent, purpose string, ses fsstore.Session, waiting bool) (*exec.Cmd, *bytes.Buffer) {
	p.t.Helper()
	cmd := exec.Command(aipmBin, "--dir", p.store.ProjectDir(), "hook", "--client", "claude", "--wake")
	cmd.Env = append(os.Environ(), fsstore.EnvAgentID+"="+agent, fsstore.EnvPasskey+"="+p.passkeys[agent], fsstore.EnvPurpose+"="+purpose)
	cmd.Stdin = strings.NewReader(`{"session_id":"cs-1","transcript_path":"/tmp/t.jsonl","cwd":"/tmp","hook_event_name":"Stop","stop_hook_active":false}`)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for waiting {
		f, free, err := p.store.TryWakeLock(ses)
		if err != nil {
			p.t.Fatal(err)
		}
		if !free {
			break
		}
		f.Close()
		if cmd.ProcessState != nil {
			p.t.Fatalf("the wake hook exited before it waited: %s", stderr.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
	return cmd, &stderr
}

// exitCode waits for cmd and returns its exit code.
func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatal(err)
	return -1
}

// The idle wake: one asyncRewake hook waits per session, exits 2 with the
// notice when another process appends a message, and exits 0 on its own
// when the session ends.
func TestHookWakesIdleSession(t *testing.T) {
	p := newProject(t)
	cs := p.connect("2026-07-28")
	token := p.authenticate(cs, "coder", "chat")
	live, err := p.store.LiveSessionsOf("coder", time.Now())
	if err != nil || len(live) != 1 {
		t.Fatalf("live sessions %v, %v", live, err)
	}
	ses := live[0]

	first, stderr := p.startWake("coder", "chat", ses, true)
	second, _ := p.startWake("coder", "chat", ses, false)
	if code := exitCode(t, second); code != 0 {
		t.Fatalf("a second wake hook for the session exited %d; want 0 at once", code)
	}
	start := time.Now()
	p.send("lead", "coder", "wake up") // another process's append
	if code := exitCode(t, first); code != 2 {
		t.Fatalf("wake hook exited %d after a message; want 2 (stderr %q)", code, stderr.String())
	}
	t.Logf("append -> wake hook exit: %v", time.Since(start))
	if got := stderr.String(); !strings.Contains(got, "1 new message for you (1 from lead)") {
		t.Fatalf("wake hook stderr %q", got)
	}
	// told: neither a hook nor the next wake says it again
	if got := p.runHook("claude", "coder", "chat", hook.PostToolUse, "Bash"); got != "" {
		t.Fatalf("PostToolUse after the wake told it: %q", got)
	}
	third, _ := p.startWake("coder", "chat", ses, true)
	if r := call(t, cs, "logout", map[string]any{"session_token": token}); r.isError {
		t.Fatal(r.text)
	}
	if code := exitCode(t, third); code != 0 {
		t.Fatalf("wake hook exited %d when its session ended; want 0", code)
	}
}

// Hooks at the same instant (Claude Code runs matching hooks in parallel;
// Stop and the idle wake race at every turn's end) tell a notice once.
func TestConcurrentHooksTellOnce(t *testing.T) {
	p := newProject(t)
	cs := p.connect("2025-11-25")
	p.authenticate(cs, "coder", "chat")
	for round := range 3 {
		p.send("lead", "coder", fmt.Sprintf("round %d", round))
		outs := make([]string, 8)
		errs := make([]error, 8)
		var wg sync.WaitGroup
		for i := range outs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				event := []string{hook.PostToolUse, hook.UserPromptSubmit, hook.Stop}[i%3]
				outs[i], errs[i] = p.hook("claude", "coder", "chat", event, "Bash")
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		told := 0
		for _, out := range outs {
			if strings.Contains(out, "1 new message for you (1 from lead)") {
				told++
			} else if out != "" {
				t.Fatalf("round %d: unexpected output %q", round, out)
			}
		}
		if told != 1 {
			t.Fatalf("round %d: %d of 8 concurrent hooks told the message; want exactly 1", round, told)
		}
	}
}
