package mcpserver_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// Seed 002's scenario with real MCP clients, each with its own aipm serve
// process: coder's task session delegates a game of shiritori with
// reviewer; coder's chat session gets process_delegation, plays the game
// with reviewer's chat session to the end and reports the delegation
// completed; the task session, waiting all along, is woken, reads the
// conversation and its messages, and reports the task completed.
func TestDelegationShiritori(t *testing.T) {
	p := newProject(t)
	task := p.taskInProgress("coder", "play shiritori with reviewer")
	waiting := &lineWatch{want: "msg=waiting", seen: make(chan struct{})}
	aTask := p.connectWith("", []string{"AIPM_LOG=debug"}, waiting)
	chatWaiting := &lineWatch{want: "msg=waiting", seen: make(chan struct{})}
	aChat := p.connectWith("", []string{"AIPM_LOG=debug"}, chatWaiting)
	peek := p.connect("") // a second client of the task session, for a look at its progress
	bChat := p.connect("")
	tt := p.authenticate(aTask, "coder", "task")
	ta := p.authenticate(aChat, "coder", "chat")
	tb := p.authenticate(bChat, "reviewer", "chat")

	g := &delegationGame{t: t, p: p, task: task, waiting: waiting, chatWaiting: chatWaiting,
		aTask: aTask, aChat: aChat, peek: peek, bChat: bChat, tt: tt, ta: ta, tb: tb}
	g.delegate()
	g.startConversation()
	g.play()
	g.report()
	g.finish()
}

// delegationGame is the state of TestDelegationShiritori as it goes.
type delegationGame struct {
	t                         *testing.T
	p                         *project
	task                      fsstore.Task
	waiting, chatWaiting      *lineWatch // the task and chat sessions' servers log a wait
	aTask, aChat, peek, bChat *mcp.ClientSession
	tt, ta, tb                string // coder's task and chat session tokens, reviewer's chat one
	dlg, cnv                  string
	chain                     []string    // the words played
	woken                     chan result // the task session's waiting get_next_action
}

// delegate: the task session delegates, and its chat session, waiting,
// takes the delegation.
func (g *delegationGame) delegate() {
	t := g.t
	r := call(t, g.aTask, "get_next_action", map[string]any{"session_token": g.tt})
	if r.str("action") != "work" || !strings.Contains(r.str("instruction"), "delegate_to_chat_session") {
		t.Fatalf("task session's first get_next_action: %s", r.text)
	}
	// A task session cannot talk; the refusal names the way.
	if r := call(t, g.aTask, "start_conversation", map[string]any{"session_token": g.tt, "target_agent_id": "reviewer"}); r.code() != "wrong_session_purpose" || !strings.Contains(r.text, "delegate_to_chat_session") {
		t.Fatalf("start_conversation from a task session: %s", r.text)
	}
	// coder's chat session is already waiting: the delegation wakes it.
	chatNext := make(chan result, 1)
	go func() {
		chatNext <- call(t, g.aChat, "get_next_action", map[string]any{"session_token": g.ta, "wait_seconds": 50})
	}()
	<-g.chatWaiting.seen
	delegated := time.Now()
	r = call(t, g.aTask, "delegate_to_chat_session", map[string]any{
		"session_token": g.tt, "target_agent_id": "reviewer", "purpose": "6-round shiritori with reviewer, start with りんご",
	})
	g.dlg = r.str("delegation_id")
	if r.isError || r.str("status") != "pending" || !strings.HasPrefix(g.dlg, "dlg_") {
		t.Fatalf("delegate_to_chat_session: %s", r.text)
	}
	// The waiting chat session takes the delegation.
	r = <-chatNext
	t.Logf("delegate_to_chat_session issued -> the waiting chat session's get_next_action returned: %s", time.Since(delegated))
	d, _ := r.data["delegation"].(map[string]any)
	if r.str("action") != "process_delegation" || d["id"] != g.dlg || d["status"] != "processing" || d["task_id"] != g.task.ID ||
		!strings.Contains(r.str("instruction"), "report_delegation_completed") {
		t.Fatalf("chat session's get_next_action: %s", r.text)
	}
}

// startConversation: while the delegation is open the task session
// waits, and reports progress; the chat session starts the conversation
// that carries it out.
func (g *delegationGame) startConversation() {
	t := g.t
	g.woken = make(chan result, 1)
	go func() {
		g.woken <- call(t, g.aTask, "get_next_action", map[string]any{"session_token": g.tt, "wait_seconds": 50})
	}()
	<-g.waiting.seen
	r := call(t, g.peek, "get_next_action", map[string]any{"session_token": g.tt, "wait_seconds": 1})
	if r.str("action") != "wait_for_delegation" || !strings.Contains(r.str("instruction"), g.dlg+" to reviewer is processing") {
		t.Fatalf("task session with an open delegation: %s", r.text)
	}
	pm := call(t, g.aChat, "get_pending_messages", map[string]any{"session_token": g.ta})
	if pd, _ := pm.data["pending_delegations"].([]any); len(pd) != 1 || pd[0].(map[string]any)["id"] != g.dlg {
		t.Fatalf("pending_delegations: %s", pm.text)
	}
	r = call(t, g.aChat, "start_conversation", map[string]any{
		"session_token": g.ta, "target_agent_id": "reviewer", "purpose": "shiritori, 6 rounds", "initial_message": "りんご",
	})
	g.cnv = r.str("conversation_id")
	if r.isError {
		t.Fatalf("start_conversation: %s", r.text)
	}
	if c := readConversation(t, g.p, g.cnv); c.TaskID != g.task.ID {
		t.Fatalf("the conversation carrying out the delegation has task %q, want %s", c.TaskID, g.task.ID)
	}
}

// play: the two chat sessions play the game to its end; the task session
// still waits.
func (g *delegationGame) play() {
	t := g.t
	var mu sync.Mutex
	used := map[string]bool{"りんご": true}
	g.chain = []string{"りんご"}
	pa := &shiritoriPlayer{t: t, cs: g.aChat, token: g.ta, me: "coder", rounds: 6, mu: &mu, used: used, chain: &g.chain, cnvID: g.cnv}
	pb := &shiritoriPlayer{t: t, cs: g.bChat, token: g.tb, me: "reviewer", mu: &mu, used: used, chain: &g.chain}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); pa.play(true) }()
	go func() { defer wg.Done(); pb.play(false) }()
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if len(g.chain) != 12 {
		t.Fatalf("chain has %d words, want 12: %v", len(g.chain), g.chain)
	}
	// The end of the conversation reminds the chat session of its delegation.
	if len(pa.ended) != 1 || !strings.Contains(pa.ended[0].str("instruction"), "report_delegation_completed(delegation_id=\""+g.dlg) {
		t.Fatalf("coder's conversation_ended: %v", pa.ended)
	}
	select {
	case r := <-g.woken:
		t.Fatalf("the task session stopped waiting before the delegation was reported: %s", r.text)
	default:
	}
	// The progress names the conversation, its state and turns.
	r := call(t, g.peek, "get_next_action", map[string]any{"session_token": g.tt, "wait_seconds": 1})
	if convs, _ := r.data["conversations"].([]any); r.str("action") != "wait_for_delegation" || len(convs) != 1 ||
		!strings.Contains(r.str("instruction"), "conversation "+g.cnv+" is ended after 12 of 20 turns") {
		t.Fatalf("progress after the game: %s", r.text)
	}
}

// report: the chat session reports the delegation completed, which wakes
// the task session with the result.
func (g *delegationGame) report() {
	t := g.t
	reported := time.Now()
	r := call(t, g.aChat, "report_delegation_completed", map[string]any{
		"session_token": g.ta, "delegation_id": g.dlg, "result": "played 6 rounds: " + strings.Join(g.chain, " → "),
	})
	if r.isError || r.str("status") != "completed" {
		t.Fatalf("report_delegation_completed: %s", r.text)
	}

	// The waiting task session is woken with the result.
	r = <-g.woken
	t.Logf("report_delegation_completed issued -> the waiting task session's get_next_action returned: %s", time.Since(reported))
	if r.str("action") != "work" || !strings.Contains(r.str("instruction"), g.dlg+" is completed: played 6 rounds") {
		t.Fatalf("the waiting task session: %s", r.text)
	}
}

// finish: the task session reads the conversation and its messages, and
// reports the task completed.
func (g *delegationGame) finish() {
	t := g.t
	r := call(t, g.aTask, "get_task", map[string]any{"session_token": g.tt})
	convs, _ := r.data["conversations"].([]any)
	dlgs, _ := r.data["delegations"].([]any)
	if len(convs) != 1 || len(dlgs) != 1 {
		t.Fatalf("get_task: %s", r.text)
	}
	c := convs[0].(map[string]any)
	if c["id"] != g.cnv || c["state"] != "ended" || c["turns"] != float64(12) || c["task_id"] != g.task.ID {
		t.Fatalf("conversation: %v", c)
	}
	if dd := dlgs[0].(map[string]any); dd["status"] != "completed" || !strings.HasPrefix(dd["result"].(string), "played 6 rounds") || dd["conversation_ids"].([]any)[0] != g.cnv {
		t.Fatalf("delegation: %v", dd)
	}
	r = call(t, g.aTask, "get_conversation_messages", map[string]any{"session_token": g.tt, "conversation_id": g.cnv})
	msgs, _ := r.data["messages"].([]any)
	if r.isError || len(msgs) != 12 {
		t.Fatalf("get_conversation_messages: %s", r.text)
	}
	for i, m := range msgs {
		if m.(map[string]any)["content"] != g.chain[i] {
			t.Fatalf("message %d is %v, want %s", i, m, g.chain[i])
		}
	}
	r = call(t, g.aTask, "report_completed", map[string]any{"session_token": g.tt, "result": "success", "summary": "played shiritori through my chat session"})
	if r.isError {
		t.Fatalf("report_completed: %s", r.text)
	}
	if got, _ := g.p.store.Task(g.task.ID); got.Status != fsstore.StatusDone {
		t.Fatalf("task is %s", got.Status)
	}
	var got fsstore.Delegation
	if g.p.doc(g.t, fsstore.Delegations, g.dlg, &got); got.Status != fsstore.DlgCompleted || len(got.History) != 3 {
		t.Fatalf("delegation file: %+v", got)
	}
}

// Every refusal of the delegation and marker tools: its code, a sentence
// that says what to do, and not a byte changed under .ai-pm.
func TestDelegationErrors(t *testing.T) {
	p := newProject(t)
	ctx := context.Background()
	p.addAgent("tester", fsstore.AgentAI)
	task := p.taskInProgress("coder", "errors")
	cs := p.connect("")
	tt := p.authenticate(cs, "coder", "task")
	tc := p.authenticate(cs, "coder", "chat")
	tr := p.authenticate(cs, "reviewer", "chat")
	r := call(t, cs, "delegate_to_chat_session", map[string]any{"session_token": tt, "target_agent_id": "reviewer", "purpose": "ask for a review"})
	open := r.str("delegation_id")
	r = call(t, cs, "delegate_to_chat_session", map[string]any{"session_token": tt, "target_agent_id": "lead", "purpose": "tell lead"})
	done := r.str("delegation_id")
	if r := call(t, cs, "report_delegation_completed", map[string]any{"session_token": tc, "delegation_id": done, "result": "told"}); r.isError {
		t.Fatal(r.text)
	}
	other, _ := p.store.CreateTask(ctx, p.cfg, fsstore.NewTask{Title: "reviewer's", Assignee: "reviewer", Requester: "lead", Status: fsstore.StatusTodo})
	long := strings.Repeat("あ", max(fsstore.MaxContext, fsstore.MaxResult)+1)
	p.deliver(cs, tc, "lead", "@@タスク通知:")

	for _, c := range []struct {
		name, tool, token string
		args              map[string]any
		code, says        string
	}{
		{"self", "delegate_to_chat_session", tt, map[string]any{"target_agent_id": "coder", "purpose": "x"}, "cannot_message_self", "name the agent"},
		{"unknown target", "delegate_to_chat_session", tt, map[string]any{"target_agent_id": "nobody", "purpose": "x"}, "agent_not_found", "aipm agent list"},
		{"bad target id", "delegate_to_chat_session", tt, map[string]any{"target_agent_id": "../x", "purpose": "x"}, "agent_not_found", ""},
		{"no purpose", "delegate_to_chat_session", tt, map[string]any{"target_agent_id": "reviewer", "purpose": " "}, "purpose_required", "say what"},
		{"long purpose", "delegate_to_chat_session", tt, map[string]any{"target_agent_id": "reviewer", "purpose": strings.Repeat("x", fsstore.MaxPurpose+1)}, "purpose_too_long", "the limit is"},
		{"long context", "delegate_to_chat_session", tt, map[string]any{"target_agent_id": "reviewer", "purpose": "x", "context": long}, "context_too_long", "the limit is"},
		{"from chat", "delegate_to_chat_session", tc, map[string]any{"target_agent_id": "reviewer", "purpose": "x"}, "wrong_session_purpose", "task session"},
		{"unknown delegation", "report_delegation_completed", tc, map[string]any{"delegation_id": "dlg_01M7YZWACRA0328GMTHNDHB18Z", "result": "x"}, "delegation_not_found", "check the id"},
		{"malformed delegation", "report_delegation_completed", tc, map[string]any{"delegation_id": "../../x", "result": "x"}, "delegation_not_found", ""},
		{"not the owner", "report_delegation_completed", tr, map[string]any{"delegation_id": open, "result": "x"}, "not_delegation_owner", "only your own"},
		{"already closed", "report_delegation_completed", tc, map[string]any{"delegation_id": done, "result": "again"}, "delegation_not_open", "nothing more"},
		{"bad status", "report_delegation_completed", tc, map[string]any{"delegation_id": open, "result": "x", "status": "done"}, "invalid_status", "completed or failed"},
		{"no result", "report_delegation_completed", tc, map[string]any{"delegation_id": open, "result": ""}, "result_required", "say what came of it"},
		{"long result", "report_delegation_completed", tc, map[string]any{"delegation_id": open, "result": long}, "result_too_long", "the limit is"},
		{"conversation for another target", "start_conversation", tc, map[string]any{"target_agent_id": "tester", "delegation_id": open}, "delegation_target_mismatch", "reviewer"},
		{"conversation for a closed delegation", "start_conversation", tc, map[string]any{"target_agent_id": "reviewer", "delegation_id": done}, "delegation_not_open", ""},
		{"conversation for someone else's", "start_conversation", tr, map[string]any{"target_agent_id": "coder", "delegation_id": open}, "not_delegation_owner", ""},
		{"empty note", "notify_task_session", tc, map[string]any{}, "message_required", "say what"},
		{"note for another's task", "notify_task_session", tc, map[string]any{"message": "x", "related_task_id": other.ID}, "not_task_assignee", "only your own"},
		{"note for no task", "notify_task_session", tc, map[string]any{"message": "x", "related_task_id": "tsk_01M7YZWACRA0328GMTHNDHB18Z"}, "task_not_found", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := p.tree()
			args := map[string]any{"session_token": c.token}
			for k, v := range c.args {
				args[k] = v
			}
			r := call(t, cs, c.tool, args)
			if r.code() != c.code || !strings.Contains(r.text, c.says) {
				t.Fatalf("%s: got %q, want %s saying %q", c.tool, r.text, c.code, c.says)
			}
			if p.tree() != before {
				t.Fatalf("refused %s changed files", c.tool)
			}
		})
	}
	// The marker checks that need their own message.
	for _, c := range []struct{ message, tool, code string }{
		{"@@タスク調整: nothing", "update_task_from_chat", "nothing_to_change"},
		{"@@タスク調整: someone else's", "update_task_from_chat", "not_task_assignee"},
	} {
		p.deliver(cs, tc, "lead", c.message)
		before := p.tree()
		args := map[string]any{"session_token": tc, "task_id": task.ID}
		if c.code == "not_task_assignee" {
			args["task_id"], args["status"] = other.ID, "backlog"
		}
		if r := call(t, cs, c.tool, args); r.code() != c.code {
			t.Fatalf("%s after %q: %s", c.tool, c.message, r.text)
		}
		if p.tree() != before {
			t.Fatalf("refused %s changed files", c.tool)
		}
	}
}

// An interrupted task ends its open delegations: the one a chat session
// took and the one still pending both become failed, saying why; the chat
// session that had taken one is told to stop; neither is handed out again.
// A task stopped by its own agent (no interrupt) ends them too: a
// delegation ends when its task ends, whatever ends it.
func TestInterruptEndsDelegations(t *testing.T) {
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			p := newProject(t)
			task := p.taskInProgress("coder", "survey the API")
			cs := p.connect(rev)
			tt := p.authenticate(cs, "coder", fsstore.PurposeTask)
			ta := p.authenticate(cs, "coder", fsstore.PurposeChat)
			taken := delegate(t, cs, tt, "ask about v1")
			if r := call(t, cs, "get_next_action", map[string]any{"session_token": ta}); r.str("action") != "process_delegation" {
				t.Fatalf("chat session's get_next_action: %s", r.text)
			}
			pending := delegate(t, cs, tt, "ask about v2")

			p.aipm(t, "task", "status", task.ID, "blocked", "--reason", "the API is frozen", "--as", "lead")

			for _, id := range []string{taken, pending} {
				var d fsstore.Delegation
				p.doc(t, fsstore.Delegations, id, &d)
				if d.Status != fsstore.DlgFailed || !strings.Contains(d.Result, "the API is frozen") {
					t.Fatalf("delegation %s after the interrupt: %s, %q", id, d.Status, d.Result)
				}
			}
			r := call(t, cs, "get_next_action", map[string]any{"session_token": ta, "wait_seconds": 1})
			if r.str("action") != "get_notifications" {
				t.Fatalf("chat session after the interrupt: %s", r.text)
			}
			notes := call(t, cs, "get_notifications", map[string]any{"session_token": ta})
			if !strings.Contains(notes.text, "Delegation "+taken) || strings.Contains(notes.text, pending) {
				t.Fatalf("chat session's notifications: %s", notes.text)
			}
		})
	}
	t.Run("stopped by its own agent", func(t *testing.T) {
		p := newProject(t)
		task := p.taskInProgress("coder", "survey the API")
		cs := p.connect("")
		tt := p.authenticate(cs, "coder", fsstore.PurposeTask)
		id := delegate(t, cs, tt, "ask about v1")
		p.aipm(t, "task", "status", task.ID, "blocked", "--reason", "waiting for a decision", "--as", "coder")
		ta := p.authenticate(cs, "coder", fsstore.PurposeChat)
		if r := call(t, cs, "get_next_action", map[string]any{"session_token": ta, "wait_seconds": 1}); r.str("action") == "process_delegation" {
			t.Fatalf("a delegation of a blocked task was handed out: %s", r.text)
		}
		var d fsstore.Delegation
		p.doc(t, fsstore.Delegations, id, &d)
		if d.Status != fsstore.DlgFailed || !strings.Contains(d.Result, "coder set task "+task.ID+" to blocked") {
			t.Fatalf("the delegation of a task its agent blocked: %s (%q)", d.Status, d.Result)
		}
	})
}

// delegate makes a delegation to reviewer from task session tt.
func delegate(t *testing.T, cs *mcp.ClientSession, tt, purpose string) string {
	t.Helper()
	r := call(t, cs, "delegate_to_chat_session", map[string]any{"session_token": tt, "target_agent_id": "reviewer", "purpose": purpose})
	if r.isError {
		t.Fatalf("delegate_to_chat_session: %s", r.text)
	}
	return r.str("delegation_id")
}
