package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// withBuilder adds to p an AI agent with a command, which only a running
// watcher starts.
func (p *project) withBuilder() {
	p.t.Helper()
	key, err := p.store.AddAgent(context.Background(), fsstore.NewAgent{ID: "builder", Type: fsstore.AgentAI, Parent: "lead", Command: []string{"sleep", "30"}})
	if err != nil {
		p.t.Fatal(err)
	}
	p.passkeys["builder"] = key
	if _, err := p.store.SaveCredential("builder", key); err != nil { // what the watcher hands the process
		p.t.Fatal(err)
	}
	if p.cfg, err = p.store.LoadConfig(); err != nil {
		p.t.Fatal(err)
	}
}

// startWatcher runs aipm watch on the project until stop is called.
func (p *project) startWatcher() (stop func()) {
	p.t.Helper()
	cmd := exec.Command(aipmBin, "--dir", p.store.ProjectDir(), "watch")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	stop = func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}
	p.t.Cleanup(stop)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if w, err := p.store.RunningWatcher(); err == nil && w != nil {
			return stop
		}
		if time.Now().After(deadline) {
			p.t.Fatal("aipm watch did not take its lock within 10 s")
		}
	}
}

// sent sends content from the chat session token to target and returns
// the answer's receiver_state.
func sent(t *testing.T, cs *mcp.ClientSession, token, target, content string) result {
	t.Helper()
	r := call(t, cs, "send_message", map[string]any{"session_token": token, "target_agent_id": target, "content": content})
	if r.isError {
		t.Fatalf("send_message to %s: %s", target, r.text)
	}
	if r.str("receiver_state") == "" || r.str("receiver_note") == "" {
		t.Fatalf("send_message to %s answered no receiver_state or receiver_note: %v", target, r.data)
	}
	return r
}

// seen is what aipm log --json says each message agent received went
// through, by content.
func (p *project) seen(agent string) map[string]fsstore.Seen {
	p.t.Helper()
	out, err := exec.Command(aipmBin, "--dir", p.store.ProjectDir(), "log", agent, "--json").Output()
	if err != nil {
		p.t.Fatalf("aipm log %s: %v", agent, err)
	}
	var logged []struct {
		fsstore.Message
		fsstore.Seen
	}
	if err := json.Unmarshal(out, &logged); err != nil {
		p.t.Fatal(err)
	}
	got := map[string]fsstore.Seen{}
	for _, m := range logged {
		got[m.Content] = m.Seen
	}
	return got
}

// TestSendSaysWhatWillHappen: no silent success. send_message answers the
// receiver's state truthfully whatever becomes of the receiver: its chat
// session killed, the watcher off or on, no command, a human; and each
// message's surfaced and read times are what the receiver actually got.
// The chaos case of issue 25, at each client's protocol.
func TestSendSaysWhatWillHappen(t *testing.T) {
	for _, proto := range revisions {
		t.Run(proto, func(t *testing.T) {
			c := newChaos(t, proto)
			c.liveThenKilled()
			c.nobodyWillTake()
			c.watcherOnAndOff()
			c.newSessionReads()
			c.receiptsMatch()
		})
	}
}

// chaos is TestSendSaysWhatWillHappen's project: coder's chat session
// sends; reviewer's is killed; builder has a command; lead is a human.
type chaos struct {
	t     *testing.T
	p     *project
	proto string
	coder *mcp.ClientSession
	ctok  string
}

func newChaos(t *testing.T, proto string) *chaos {
	p := newProject(t)
	p.withBuilder()
	c := &chaos{t: t, p: p, proto: proto}
	c.coder = p.connect(proto)
	c.ctok = p.authenticate(c.coder, "coder", "chat")
	return c
}

// send sends content to target and checks the receiver_state it answers.
func (c *chaos) send(target, content, want string) {
	c.t.Helper()
	r := sent(c.t, c.coder, c.ctok, target, content)
	if got := r.str("receiver_state"); got != want {
		c.t.Errorf("%s to %s: %s (%s); want %s", content, target, got, r.str("receiver_note"), want)
	}
}

// liveThenKilled: a live chat session gets m1 and reads it; m2 is handed
// out, then its server is SIGKILLed before its next call.
func (c *chaos) liveThenKilled() {
	t, p := c.t, c.p
	reviewer := p.connect(c.proto)
	rtok := p.authenticate(reviewer, "reviewer", "chat")
	for i, m := range []string{"m1", "m2"} {
		c.send("reviewer", m, fsstore.ReceiverLive)
		if r := call(t, reviewer, "get_pending_messages", map[string]any{"session_token": rtok}); !strings.Contains(r.text, m) {
			t.Fatalf("reviewer did not get %s: %s", m, r.text)
		}
		if i == 0 {
			call(t, reviewer, "list_tasks", map[string]any{"session_token": rtok}) // its next call: m1 read
		}
	}
	p.killServerOf("reviewer")
}

// nobodyWillTake: none of these may claim live or starting.
func (c *chaos) nobodyWillTake() {
	c.send("reviewer", "m3", fsstore.ReceiverQueued) // its session's process is dead
	c.send("builder", "b1", fsstore.ReceiverQueued)  // a command, no watcher
	c.send("lead", "h1", fsstore.ReceiverQueued)     // a human
	// without a saved passkey the watcher cannot start reviewer2
	if _, err := c.p.store.AddAgent(context.Background(), fsstore.NewAgent{ID: "reviewer2", Type: fsstore.AgentAI, Command: []string{"sleep", "30"}}); err != nil {
		c.t.Fatal(err)
	}
	if r := sent(c.t, c.coder, c.ctok, "reviewer2", "r1"); r.str("receiver_state") != fsstore.ReceiverQueued || !strings.Contains(r.str("receiver_note"), "no saved passkey") {
		c.t.Errorf("r1 to an agent without a saved passkey: %s (%s)", r.str("receiver_state"), r.str("receiver_note"))
	}
}

// watcherOnAndOff: the running watcher starts builder's command
// (starting), not reviewer (no command) nor reviewer2 (no passkey); once
// stopped, builder is queued again.
func (c *chaos) watcherOnAndOff() {
	stop := c.p.startWatcher()
	c.send("builder", "b2", fsstore.ReceiverStarting)
	c.send("reviewer", "m4", fsstore.ReceiverQueued)
	c.send("reviewer2", "r2", fsstore.ReceiverQueued)
	stop()
	c.send("builder", "b3", fsstore.ReceiverQueued)
}

// newSessionReads: a new reviewer session gets m2 again (redelivered), m3
// and m4, and reads them by answering.
func (c *chaos) newSessionReads() {
	t, p := c.t, c.p
	again := p.connect(c.proto)
	rtok := p.authenticate(again, "reviewer", "chat")
	r := call(t, again, "get_pending_messages", map[string]any{"session_token": rtok})
	for _, m := range []string{"m2", "m3", "m4"} {
		if !strings.Contains(r.text, m) {
			t.Fatalf("the new session did not get %s: %s", m, r.text)
		}
	}
	call(t, again, "respond_chat", map[string]any{"session_token": rtok, "content": "thanks"})
}

// receiptsMatch: each message's surfaced and read times are what its
// receiver got; what nobody took has neither; the sender sees them.
func (c *chaos) receiptsMatch() {
	t, p := c.t, c.p
	got := p.seen("reviewer")
	for m, via := range map[string]string{"m1": "list_tasks", "m2": "respond_chat", "m3": "respond_chat", "m4": "respond_chat"} {
		s := got[m]
		if s.SurfacedVia != "get_pending_messages" || s.SurfacedAt.IsZero() || s.ReadAt.Before(s.SurfacedAt) || s.ReadVia != via {
			t.Errorf("%s: %+v; want surfaced by get_pending_messages, then read via %s", m, s, via)
		}
	}
	if m2, m3 := got["m2"], got["m3"]; !m2.SurfacedAt.Before(m3.SurfacedAt) {
		t.Errorf("m2 was surfaced to the killed session, before m3: %v, %v", m2.SurfacedAt, m3.SurfacedAt)
	}
	for agent, msgs := range map[string][]string{"builder": {"b1", "b2", "b3"}, "lead": {"h1"}, "reviewer2": {"r1", "r2"}} {
		got := p.seen(agent)
		for _, m := range msgs {
			if s := got[m]; !s.SurfacedAt.IsZero() || !s.ReadAt.IsZero() {
				t.Errorf("%s, never taken by %s: %+v", m, agent, s)
			}
		}
	}
	if s := p.seen("coder")["m1"]; s.ReadAt.IsZero() || s.ReadVia != "list_tasks" {
		t.Errorf("aipm log coder: m1 as the sender sees it: %+v", s)
	}
}

// killServerOf SIGKILLs the aipm serve process of agent's live session.
func (p *project) killServerOf(agent string) {
	p.t.Helper()
	live, err := p.store.LiveSessionsOf(agent, time.Now())
	if err != nil || len(live) != 1 {
		p.t.Fatalf("live sessions of %s: %v %v", agent, live, err)
	}
	pid := live[0].PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		p.t.Fatal(err)
	}
	// A zombie until its client reaps it: the store's own check says when
	// the session's process is gone.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if live, _ := p.store.LiveSessionsOf(agent, time.Now()); len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("pid %d survived SIGKILL", pid)
		}
	}
}

// TestNewMessageNotice: a chat session is told of messages that arrive
// while it does something else, on the response of whatever tool it calls,
// coalesced by sender and told once; never on a refused call, never by
// the tools whose answer speaks of messages, never to a task session.
func TestNewMessageNotice(t *testing.T) {
	for _, proto := range revisions {
		t.Run(proto, func(t *testing.T) {
			p := newProject(t)
			p.taskInProgress("coder", "Fix login")
			cs := p.connect(proto)
			chat := p.authenticate(cs, "coder", "chat")
			task := p.authenticate(cs, "coder", "task")
			line := func(tool, token string, args map[string]any) string {
				t.Helper()
				if args == nil {
					args = map[string]any{}
				}
				args["session_token"] = token
				r := call(t, cs, tool, args)
				if r.isError {
					return r.text[strings.LastIndexByte(r.text, '\n')+1:]
				}
				return r.str("notification")
			}
			for _, m := range []string{"one", "two", "three"} {
				p.send("lead", "coder", m)
			}
			p.send("reviewer", "coder", "four")

			if got := line("list_tasks", task, nil); got != "notifications: none" {
				t.Errorf("a task session was told of chat: %q", got)
			}
			if got := line("list_tasks", chat, map[string]any{"limit": 100000}); got != "notifications: none" {
				t.Errorf("a refused call told: %q", got)
			}
			want := "notifications: 3 new messages from lead, 1 from reviewer: call get_pending_messages when you are ready" // not "none": get_notifications lists them
			if got := line("list_tasks", chat, nil); got != want {
				t.Errorf("first call after four messages:\n got %q\nwant %q", got, want)
			}
			if got := line("list_tasks", chat, nil); got != "notifications: none" {
				t.Errorf("told again: %q", got)
			}
			p.send("lead", "coder", "five")
			if got := line("get_next_action", chat, nil); got != "notifications: none" {
				t.Errorf("get_next_action, whose answer is get_pending_messages, added the notice: %q", got)
			}
			if got := line("list_tasks", chat, nil); !strings.Contains(got, "1 new message from lead:") {
				t.Errorf("after a fifth: %q", got)
			}
			// with notifications: the count, then the messages, neither said as none
			if _, err := p.store.Notify(context.Background(), "coder", fsstore.Notification{Message: "look"}); err != nil {
				t.Fatal(err)
			}
			p.send("lead", "coder", "six")
			if got, want := line("list_tasks", chat, nil), "notifications: you have 1 notification: call get_notifications; 1 new message from lead: call get_pending_messages when you are ready"; got != want {
				t.Errorf("a notification and a message:\n got %q\nwant %q", got, want)
			}
			p.send("lead", "coder", "seven")
			if got, want := line("list_tasks", chat, nil), "notifications: 1 unread, told before; 1 new message from lead: call get_pending_messages when you are ready"; got != want {
				t.Errorf("a notification told before and a message:\n got %q\nwant %q", got, want)
			}
			got := p.seen("coder")
			for _, m := range []string{"one", "two", "three", "four", "five", "six", "seven"} {
				if s := got[m]; s.SurfacedVia != "notification line" || !s.ReadAt.IsZero() {
					t.Errorf("%s: %+v; want surfaced by the notification line, unread", m, s)
				}
			}
		})
	}
}

// TestMarkRead: mark_read(message_ids) reads what the session was handed
// and says when; what was not handed, or is not the agent's, is refused
// with what to do, and changes nothing.
func TestMarkRead(t *testing.T) {
	for _, proto := range revisions {
		t.Run(proto, func(t *testing.T) {
			p := newProject(t)
			cs := p.connect(proto)
			tok := p.authenticate(cs, "coder", "chat")
			p.send("lead", "coder", "first")
			p.send("lead", "coder", "second")
			r := call(t, cs, "get_pending_messages", map[string]any{"session_token": tok})
			msgs, _ := r.data["pending_messages"].([]any)
			if len(msgs) != 2 {
				t.Fatalf("get_pending_messages: %s", r.text)
			}
			first := msgs[0].(map[string]any)["id"].(string)
			p.send("lead", "coder", "third")
			tail, err := p.store.Tail("coder", 1)
			if err != nil || len(tail) != 1 {
				t.Fatal(tail, err)
			}
			third := tail[0].ID
			call(t, cs, "list_tasks", map[string]any{"session_token": tok}) // reads first and second, tells third

			before := p.tree()
			for _, c := range []struct {
				ids  []any
				code string
			}{
				{[]any{}, "message_required"},
				{[]any{"x"}, "message_not_found"},
				{[]any{first, third}, "message_not_handed"},
				{[]any{fsstore.NewID(fsstore.PrefixMessage)}, "message_not_found"},
				{make([]any, fsstore.MaxMarkRead+1), "message_required"},
			} {
				for i := range c.ids {
					if c.ids[i] == nil {
						c.ids[i] = first
					}
				}
				r := call(t, cs, "mark_read", map[string]any{"session_token": tok, "message_ids": c.ids})
				if r.code() != c.code {
					t.Errorf("mark_read %d ids: %q; want %s", len(c.ids), r.text, c.code)
				}
				if p.tree() != before {
					t.Errorf("mark_read %v refused but changed .ai-pm", c.ids)
				}
			}
			// first was read by the call after its batch; third, once handed, by mark_read
			r = call(t, cs, "get_pending_messages", map[string]any{"session_token": tok})
			if !strings.Contains(r.text, "third") {
				t.Fatalf("get_pending_messages: %s", r.text)
			}
			r = call(t, cs, "mark_read", map[string]any{"session_token": tok, "message_ids": []any{first, third, first}})
			read, _ := r.data["read"].([]any)
			if r.isError || len(read) != 2 {
				t.Fatalf("mark_read of handed messages: %s", r.text)
			}
			for _, x := range read {
				if at, _ := x.(map[string]any)["read_at"].(string); at == "" || strings.HasPrefix(at, "0001") {
					t.Errorf("mark_read answered no read time: %v", x)
				}
			}
			got := p.seen("coder")
			if s := got["first"]; s.ReadVia != "list_tasks" {
				t.Errorf("first: %+v; want read via list_tasks", s)
			}
			if s := got["third"]; s.ReadVia != "mark_read" || s.SurfacedVia != "notification line" {
				t.Errorf("third: %+v; want told by the notification line, read via mark_read", s)
			}
		})
	}
}
