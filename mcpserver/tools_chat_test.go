package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
	"aipm/internal/testenv"
)

// A get_next_action waiting in one server process returns
// get_pending_messages when another process sends a message.
func TestWaitingNextActionWakes(t *testing.T) {
	p := newProject(t)
	a := p.connect("")
	waiting := &lineWatch{want: "msg=waiting", seen: make(chan struct{})}
	b := p.connectWith("", []string{"AIPM_LOG=debug"}, waiting)
	ta := p.authenticate(a, "coder", "chat")
	tb := p.authenticate(b, "reviewer", "chat")

	got := make(chan result, 1)
	go func() { got <- call(t, b, "get_next_action", map[string]any{"session_token": tb, "wait_seconds": 50}) }()
	// Send only once B's server logs that the call is waiting: a message
	// sent earlier would be found without any wait.
	<-waiting.seen
	if r := call(t, a, "send_message", map[string]any{"session_token": ta, "target_agent_id": "reviewer", "content": "ping"}); r.isError {
		t.Fatalf("send_message: %s", r.text)
	}
	r := <-got
	if r.str("action") != "get_pending_messages" || !strings.Contains(r.str("instruction"), "coder") {
		t.Fatalf("waiting get_next_action returned %s", r.text)
	}
}

// The wait ends when the client cancels the call, and the server goes on.
func TestWaitEndsOnCancel(t *testing.T) {
	p := newProject(t)
	cs := p.connect("")
	token := p.authenticate(cs, "reviewer", "chat")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_next_action", Arguments: map[string]any{"session_token": token, "wait_seconds": 50}})
		done <- err
	}()
	call(t, cs, "help", map[string]any{}) // the waiting call does not block others
	cancel()
	if err := <-done; err == nil {
		t.Fatal("cancelled call returned no error")
	}
	if r := call(t, cs, "get_pending_messages", map[string]any{"session_token": token}); r.isError {
		t.Fatalf("after cancel: %s", r.text)
	}
}

func TestChatRoundTrip(t *testing.T) {
	p := newProject(t)
	a, b := p.connect(""), p.connect("")
	ta := p.authenticate(a, "coder", "chat")
	tb := p.authenticate(b, "reviewer", "chat")
	if r := call(t, b, "respond_chat", map[string]any{"session_token": tb, "content": "hi"}); r.code() != "no_message_to_respond" {
		t.Fatalf("respond_chat before any message: %s", r.text)
	}
	for i := 0; i < 3; i++ {
		call(t, a, "send_message", map[string]any{"session_token": ta, "target_agent_id": "reviewer", "content": fmt.Sprintf("question %d", i)})
	}
	if r := call(t, b, "get_next_action", map[string]any{"session_token": tb}); r.str("action") != "get_pending_messages" {
		t.Fatalf("get_next_action: %s", r.text)
	}
	r := call(t, b, "get_pending_messages", map[string]any{"session_token": tb, "limit": 2})
	msgs, _ := r.data["pending_messages"].([]any)
	if len(msgs) != 2 || r.data["has_more"] != true || msgs[0].(map[string]any)["content"] != "question 0" {
		t.Fatalf("first page: %s", r.text)
	}
	r = call(t, b, "get_pending_messages", map[string]any{"session_token": tb})
	msgs, _ = r.data["pending_messages"].([]any)
	ctxMsgs, _ := r.data["context"].([]any)
	if len(msgs) != 1 || r.data["has_more"] != false || len(ctxMsgs) != 2 {
		t.Fatalf("second page: %s", r.text)
	}
	if r := call(t, b, "respond_chat", map[string]any{"session_token": tb, "content": "answer"}); r.isError || r.str("target_agent_id") != "coder" || r.data["success"] != true {
		t.Fatalf("respond_chat: %s", r.text)
	}
	r = call(t, a, "get_pending_messages", map[string]any{"session_token": ta})
	msgs, _ = r.data["pending_messages"].([]any)
	if len(msgs) != 1 || msgs[0].(map[string]any)["sender_id"] != "reviewer" {
		t.Fatalf("coder's inbox: %s", r.text)
	}
	if r := call(t, b, "get_next_action", map[string]any{"session_token": tb, "wait_seconds": 1}); r.str("action") != "wait_for_messages" {
		t.Fatalf("idle get_next_action: %s", r.text)
	}
}

func TestMessagingBadInput(t *testing.T) {
	p := newProject(t)
	cs := p.connect("")
	chat := p.authenticate(cs, "coder", "chat")
	p.taskInProgress("reviewer", "a task")
	task := p.authenticate(cs, "reviewer", "task")
	// A directory of an agent that was removed from the config.
	os.MkdirAll(filepath.Join(p.store.Root(), "agents", "former"), 0o755)
	before := p.tree()
	ok4000 := strings.Repeat("日本語テキスト", 4000/7) + strings.Repeat("あ", 4000%7)
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"session_token": chat, "target_agent_id": "reviewer", "content": strings.Repeat("x", 4001)}, "content_too_long: content has 4001 characters; the limit is 4000"},
		{map[string]any{"session_token": chat, "target_agent_id": "reviewer", "content": ok4000 + "x"}, "content_too_long"},
		{map[string]any{"session_token": chat, "target_agent_id": "reviewer", "content": "  "}, "content_empty"},
		{map[string]any{"session_token": chat, "target_agent_id": "coder", "content": "me"}, "cannot_message_self"},
		{map[string]any{"session_token": chat, "target_agent_id": "ghost", "content": "x"}, "agent_not_found"},
		{map[string]any{"session_token": chat, "target_agent_id": "../../etc", "content": "x"}, "agent_not_found: agent id \"../../etc\" is invalid"},
		{map[string]any{"session_token": chat, "target_agent_id": "former", "content": "x"}, "target_agent_not_in_project"},
		{map[string]any{"session_token": chat, "target_agent_id": "reviewer", "content": "x", "related_task_id": "tsk_nope"}, "task_not_found"},
		{map[string]any{"session_token": chat, "target_agent_id": "reviewer", "content": "x", "conversation_id": "cnv_nope"}, "conversation_not_found"},
		{map[string]any{"session_token": chat, "target_agent_id": "reviewer"}, "invalid_arguments: the arguments of send_message do not match its input schema (required: missing properties: [\"content\"])"},
		{map[string]any{"session_token": "ses_01M7YZWACRA0328GMTHNDHB18Z.x", "target_agent_id": "reviewer", "content": "x"}, "invalid_session"},
		{map[string]any{"session_token": task, "target_agent_id": "coder", "content": "x"}, "wrong_session_purpose: send_message needs a chat session"},
	} {
		r := call(t, cs, "send_message", tc.args)
		if !r.isError || !strings.HasPrefix(r.text, tc.want) {
			t.Errorf("send_message %v:\n got %q\nwant prefix %q", tc.args["content"], r.text, tc.want)
		}
	}
	if r := call(t, cs, "send_message", map[string]any{"session_token": task, "target_agent_id": "coder", "content": "x"}); !strings.Contains(r.text, "delegate_to_chat_session") {
		t.Errorf("a task session's send_message refusal does not name delegate_to_chat_session: %s", r.text)
	}
	if p.tree() != before {
		t.Fatal("refused sends changed .ai-pm")
	}
	if r := call(t, cs, "send_message", map[string]any{"session_token": chat, "target_agent_id": "reviewer", "content": ok4000}); r.isError {
		t.Fatalf("4000 multibyte characters refused: %s", r.text)
	}
}

// Eight servers, each driven by its own SDK client, send 1,000 messages
// each to overlapping targets while every agent reads its inbox through
// get_pending_messages. Afterwards every message is exactly once in the
// sender's file and once in the receiver's, and was received exactly once.
func TestManyServersSendAndReceive(t *testing.T) {
	testenv.SkipIfShort(t, "multi-process load test")
	const agents, perAgent = 8, 1000
	p := newProject(t)
	p.addAIAgents(agents)
	clients := make([]chatClient, agents)
	for i := range clients {
		cs := p.connect("")
		clients[i] = chatClient{cs: cs, token: p.authenticate(cs, fmt.Sprintf("a%d", i), "chat")}
	}
	sent, received := exchange(t, clients, perAgent)
	checkExchange(t, p, agents, perAgent, sent, received)
}

// addAIAgents adds the AI agents a0 to a<n-1>, with their passkeys.
func (p *project) addAIAgents(n int) {
	p.t.Helper()
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("a%d", i)
		key, err := p.store.AddAgent(context.Background(), fsstore.NewAgent{ID: id, Type: fsstore.AgentAI})
		if err != nil {
			p.t.Fatal(err)
		}
		p.passkeys[id] = key
	}
}

// checkExchange checks what exchange did among agents a0 to a<agents-1>:
// perAgent messages sent by each, each received exactly once, and each
// exactly once in each of its two files, no line torn (checkChatCopies).
func checkExchange(t *testing.T, p *project, agents, perAgent int, sent map[string]string, received map[string]int) {
	t.Helper()
	if len(sent) != agents*perAgent {
		t.Fatalf("%d messages sent, want %d", len(sent), agents*perAgent)
	}
	for id, n := range received {
		if n != 1 {
			t.Fatalf("message %s received %d times", id, n)
		}
	}
	if len(received) != len(sent) {
		t.Fatalf("%d messages received through the cursor, %d sent", len(received), len(sent))
	}
	checkChatCopies(t, p, agents, sent)
}

// chatClient is a client of its own aipm serve, with a chat session;
// reads, if set, is the client session its reads go through (else cs).
type chatClient struct {
	cs    *mcp.ClientSession
	token string
	reads *mcp.ClientSession
}

// exchange has every client send perAgent messages (sendAll) while every
// client reads its inbox (readUntilStopped), until all are sent and then
// read: each message's receiver by id, and how many times each was
// received.
func exchange(t *testing.T, clients []chatClient, perAgent int) (sent map[string]string, received map[string]int) {
	var mu sync.Mutex
	sent, received = map[string]string{}, map[string]int{}
	var sending, reading sync.WaitGroup
	stop := make(chan struct{})
	for i, c := range clients {
		sending.Add(1)
		go func() {
			defer sending.Done()
			c.sendAll(t, i, len(clients), perAgent, func(id, to string) {
				mu.Lock()
				sent[id] = to
				mu.Unlock()
			})
		}()
		reading.Add(1)
		go func() {
			defer reading.Done()
			c.readUntilStopped(t, stop, func(id string) {
				mu.Lock()
				received[id]++
				mu.Unlock()
			})
		}()
	}
	sending.Wait()
	close(stop)
	reading.Wait()
	return sent, received
}

// sendAll sends perAgent messages from agent a<i> to three overlapping
// targets, recording each message's id and receiver.
func (c chatClient) sendAll(t *testing.T, i, agents, perAgent int, record func(id, to string)) {
	for n := 0; n < perAgent; n++ {
		to := fmt.Sprintf("a%d", (i+1+n%3)%agents) // three overlapping targets each
		r := call(t, c.cs, "send_message", map[string]any{"session_token": c.token, "target_agent_id": to, "content": fmt.Sprintf("a%d #%d", i, n)})
		if r.isError {
			t.Errorf("send: %s", r.text)
			return
		}
		record(r.str("message_id"), to)
	}
}

// readUntilStopped reads the session's inbox, recording each message id it
// receives, until a read begun after stop closed finds nothing. Each read
// passes the ack of the one before, as a client does: over HTTP nothing
// else proves it read (links.go).
func (c chatClient) readUntilStopped(t *testing.T, stop <-chan struct{}, record func(id string)) {
	ack := ""
	for {
		// Only a read that began after the senders finished may end
		// the loop by finding nothing.
		finished := false
		select {
		case <-stop:
			finished = true
		default:
		}
		reads := c.cs
		if c.reads != nil {
			reads = c.reads
		}
		args := map[string]any{"session_token": c.token, "limit": 100}
		if ack != "" {
			args["ack"] = ack
		}
		r := call(t, reads, "get_pending_messages", args)
		if r.isError {
			t.Errorf("get_pending_messages: %s", r.text)
			return
		}
		ack = r.str("ack")
		msgs, _ := r.data["pending_messages"].([]any)
		for _, m := range msgs {
			record(m.(map[string]any)["id"].(string))
		}
		if finished && len(msgs) == 0 {
			return
		}
	}
}

// checkChatCopies: every message sent (id -> receiver) is exactly once in
// the receiver's chat file and once in the sender's, and nothing else is.
func checkChatCopies(t *testing.T, p *project, agents int, sent map[string]string) {
	t.Helper()
	inFile := map[string]int{}
	for i := 0; i < agents; i++ {
		path, _ := p.store.ChatPath(fmt.Sprintf("a%d", i))
		recs, bad, tail, err := fsstore.ReadAll(path)
		if err != nil || len(bad) > 0 || tail != 0 {
			t.Fatalf("a%d: err=%v bad=%v tail=%d", i, err, bad, tail)
		}
		for _, r := range recs {
			var m fsstore.Message
			if err := json.Unmarshal(r.Data, &m); err != nil {
				t.Fatal(err)
			}
			owner := fmt.Sprintf("a%d", i)
			switch {
			case m.ReceiverID == "" && sent[m.ID] == owner: // the receiver's copy, in the receiver's file
				inFile[m.ID+"/in"]++
			case m.ReceiverID == sent[m.ID] && m.SenderID == owner: // the sender's copy, in the sender's file
				inFile[m.ID+"/out"]++
			default:
				t.Fatalf("%s holds a stray line %s", owner, r.Data)
			}
		}
	}
	for id := range sent {
		if inFile[id+"/in"] != 1 || inFile[id+"/out"] != 1 {
			t.Fatalf("message %s: %d receiver copies, %d sender copies", id, inFile[id+"/in"], inFile[id+"/out"])
		}
	}
	if len(inFile) != 2*len(sent) {
		t.Fatalf("%d copies in the files, want %d", len(inFile), 2*len(sent))
	}
}

// The response shapes of seeds 000 and 004, so that an agent prompt
// written for them works unchanged, and empty lists are [], never null.
func TestSeedResponseShapes(t *testing.T) {
	p := newProject(t)
	task := p.taskInProgress("coder", "shapes")
	cs := p.connect("")
	chat := p.authenticate(cs, "reviewer", "chat")
	token := p.authenticate(cs, "coder", "task")

	r := call(t, cs, "get_pending_messages", map[string]any{"session_token": chat})
	for _, list := range []string{"pending_messages", "context", "pending_delegations"} {
		if _, ok := r.data[list].([]any); !ok {
			t.Errorf("get_pending_messages: %s is %v, want a list ([] when empty)", list, r.data[list])
		}
	}
	if r := call(t, cs, "get_notifications", map[string]any{"session_token": token}); r.data["notifications"] == nil {
		t.Errorf("get_notifications with none: notifications = %v, want []", r.data["notifications"])
	}

	r = call(t, cs, "send_message", map[string]any{"session_token": chat, "target_agent_id": "coder", "content": "hi"})
	if r.data["success"] != true || !strings.HasPrefix(r.str("message_id"), "msg_") || r.str("target_agent_id") != "coder" {
		t.Errorf("send_message: %v", r.data)
	}

	interrupt(t, p, task.ID)
	r = call(t, cs, "get_notifications", map[string]any{"session_token": token, "mark_as_read": false})
	notes, _ := r.data["notifications"].([]any)
	if len(notes) != 1 {
		t.Fatalf("get_notifications: %v", r.data)
	}
	n := notes[0].(map[string]any)
	if n["type"] != "interrupt" || n["action"] != "pause" || !strings.Contains(n["instruction"].(string), "report_completed") || n["task_id"] != task.ID {
		t.Errorf("interrupt notification: %v", n)
	}
}
