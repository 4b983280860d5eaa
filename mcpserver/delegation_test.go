package mcpserver_test

import (
	"strings"
	"sync"
	"testing"

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
	aChat := p.connect("")
	bChat := p.connect("")
	tt := p.authenticate(aTask, "coder", "task")
	ta := p.authenticate(aChat, "coder", "chat")
	tb := p.authenticate(bChat, "reviewer", "chat")

	r := call(t, aTask, "get_next_action", map[string]any{"session_token": tt})
	if r.str("action") != "work" || !strings.Contains(r.str("instruction"), "delegate_to_chat_session") {
		t.Fatalf("task session's first get_next_action: %s", r.text)
	}
	// A task session cannot talk; the refusal names the way.
	if r := call(t, aTask, "start_conversation", map[string]any{"session_token": tt, "target_agent_id": "reviewer"}); r.code() != "wrong_session_purpose" || !strings.Contains(r.text, "delegate_to_chat_session") {
		t.Fatalf("start_conversation from a task session: %s", r.text)
	}
	r = call(t, aTask, "delegate_to_chat_session", map[string]any{
		"session_token": tt, "target_agent_id": "reviewer", "purpose": "6-round shiritori with reviewer, start with りんご",
	})
	dlg := r.str("delegation_id")
	if r.isError || r.str("status") != "pending" || !strings.HasPrefix(dlg, "dlg_") {
		t.Fatalf("delegate_to_chat_session: %s", r.text)
	}
	// While it is open the task session waits, and reports progress.
	r = call(t, aTask, "get_next_action", map[string]any{"session_token": tt, "wait_seconds": 1})
	if r.str("action") != "wait_for_delegation" || !strings.Contains(r.str("instruction"), dlg+" to reviewer is pending") {
		t.Fatalf("task session with an open delegation: %s", r.text)
	}
	woken := make(chan result, 1)
	go func() { woken <- call(t, aTask, "get_next_action", map[string]any{"session_token": tt, "wait_seconds": 50}) }()
	<-waiting.seen

	// The chat session takes the delegation.
	r = call(t, aChat, "get_next_action", map[string]any{"session_token": ta})
	d, _ := r.data["delegation"].(map[string]any)
	if r.str("action") != "process_delegation" || d["id"] != dlg || d["status"] != "processing" || d["taskId"] != task.ID ||
		!strings.Contains(r.str("instruction"), "report_delegation_completed") {
		t.Fatalf("chat session's get_next_action: %s", r.text)
	}
	pm := call(t, aChat, "get_pending_messages", map[string]any{"session_token": ta})
	if pd, _ := pm.data["pending_delegations"].([]any); len(pd) != 1 || pd[0].(map[string]any)["id"] != dlg {
		t.Fatalf("pending_delegations: %s", pm.text)
	}
	r = call(t, aChat, "start_conversation", map[string]any{
		"session_token": ta, "target_agent_id": "reviewer", "purpose": "shiritori, 6 rounds", "initial_message": "りんご",
	})
	cnv := r.str("conversation_id")
	if r.isError {
		t.Fatalf("start_conversation: %s", r.text)
	}
	if c := readConversation(t, p, cnv); c.TaskID != task.ID {
		t.Fatalf("the conversation carrying out the delegation has task %q, want %s", c.TaskID, task.ID)
	}

	var mu sync.Mutex
	used, chain := map[string]bool{"りんご": true}, []string{"りんご"}
	pa := &shiritoriPlayer{t: t, cs: aChat, token: ta, me: "coder", rounds: 6, mu: &mu, used: used, chain: &chain, cnvID: cnv}
	pb := &shiritoriPlayer{t: t, cs: bChat, token: tb, me: "reviewer", mu: &mu, used: used, chain: &chain}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); pa.play(true) }()
	go func() { defer wg.Done(); pb.play(false) }()
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if len(chain) != 12 {
		t.Fatalf("chain has %d words, want 12: %v", len(chain), chain)
	}
	select {
	case r := <-woken:
		t.Fatalf("the task session stopped waiting before the delegation was reported: %s", r.text)
	default:
	}
	r = call(t, aChat, "report_delegation_completed", map[string]any{
		"session_token": ta, "delegation_id": dlg, "result": "played 6 rounds: " + strings.Join(chain, " → "),
	})
	if r.isError || r.str("status") != "completed" {
		t.Fatalf("report_delegation_completed: %s", r.text)
	}

	// The waiting task session is woken with the result.
	r = <-woken
	if r.str("action") != "work" || !strings.Contains(r.str("instruction"), dlg+" is completed: played 6 rounds") {
		t.Fatalf("the waiting task session: %s", r.text)
	}
	r = call(t, aTask, "get_task_conversations", map[string]any{"session_token": tt})
	convs, _ := r.data["conversations"].([]any)
	dlgs, _ := r.data["delegations"].([]any)
	if len(convs) != 1 || len(dlgs) != 1 {
		t.Fatalf("get_task_conversations: %s", r.text)
	}
	c := convs[0].(map[string]any)
	if c["id"] != cnv || c["state"] != "ended" || c["turns"] != float64(12) || c["taskId"] != task.ID {
		t.Fatalf("conversation: %v", c)
	}
	if dd := dlgs[0].(map[string]any); dd["status"] != "completed" || !strings.HasPrefix(dd["result"].(string), "played 6 rounds") || dd["conversationIds"].([]any)[0] != cnv {
		t.Fatalf("delegation: %v", dd)
	}
	r = call(t, aTask, "get_conversation_messages", map[string]any{"session_token": tt, "conversation_id": cnv})
	msgs, _ := r.data["messages"].([]any)
	if r.isError || len(msgs) != 12 {
		t.Fatalf("get_conversation_messages: %s", r.text)
	}
	for i, m := range msgs {
		if m.(map[string]any)["content"] != chain[i] {
			t.Fatalf("message %d is %v, want %s", i, m, chain[i])
		}
	}
	r = call(t, aTask, "report_completed", map[string]any{"session_token": tt, "result": "success", "summary": "played shiritori through my chat session"})
	if r.isError {
		t.Fatalf("report_completed: %s", r.text)
	}
	if got, _ := p.store.Task(task.ID); got.Status != fsstore.StatusDone {
		t.Fatalf("task is %s", got.Status)
	}
	if got, _ := p.store.Delegation(dlg); got.Status != fsstore.DlgCompleted || len(got.History) != 3 {
		t.Fatalf("delegation file: %+v", got)
	}
}
