package mcpserver_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// protocols are the protocol versions every group path runs at.
var groupProtocols = []string{"2025-06-18", "2025-11-25", "2026-07-28"}

// withTester adds a third AI agent, tester, and the group
// team = [coder, reviewer, tester] to the project.
func (p *project) withTester() {
	p.t.Helper()
	key, err := p.store.AddAgent(context.Background(), fsstore.NewAgent{ID: "tester", Type: fsstore.AgentAI, Parent: "lead"})
	if err != nil {
		p.t.Fatal(err)
	}
	p.passkeys["tester"] = key
	path := filepath.Join(p.store.Root(), "config.toml")
	data, err := os.ReadFile(path)
	if err != nil {
		p.t.Fatal(err)
	}
	data = append(data, "\n[groups]\nteam = [\"coder\", \"reviewer\", \"tester\"]\n"...)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		p.t.Fatal(err)
	}
	if p.cfg, err = p.store.LoadConfig(); err != nil {
		p.t.Fatal(err)
	}
}

func pendingOf(t *testing.T, r result) []map[string]any {
	t.Helper()
	if r.isError {
		t.Fatalf("get_pending_messages: %s", r.text)
	}
	raw, _ := r.data["pending_messages"].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, m := range raw {
		out = append(out, m.(map[string]any))
	}
	return out
}

// TestGroupMessages: send_message to a group or a list writes one line per
// receiver and one for the sender, answers one receiver state per receiver,
// is not a conversation turn, and respond_chat answers the sender only.
func TestGroupMessages(t *testing.T) {
	for _, proto := range groupProtocols {
		t.Run(proto, func(t *testing.T) { groupMessages(t, proto) })
	}
}

func groupMessages(t *testing.T, proto string) {
	p := newProject(t)
	p.withTester()
	a, b := p.connect(proto), p.connect(proto)
	ta := p.authenticate(a, "coder", "chat")
	tb := p.authenticate(b, "reviewer", "chat")

	r := call(t, a, "send_message", map[string]any{"session_token": ta, "target_group": "team", "content": "standup at 10"})
	if r.isError {
		t.Fatalf("send_message to a group: %s", r.text)
	}
	recv, _ := r.data["receivers"].([]any)
	if len(recv) != 2 || r.str("target_group") != "team" || r.str("conversation_id") != "" || r.str("message_id") == "" {
		t.Fatalf("answer %s", r.text)
	}
	states := map[string]string{}
	for _, x := range recv {
		m := x.(map[string]any)
		states[m["agent_id"].(string)] = m["receiver_state"].(string)
	}
	if states["reviewer"] != fsstore.ReceiverLive || states["tester"] != fsstore.ReceiverQueued {
		t.Errorf("receiver states %v: reviewer has a chat session, tester nothing to start it", states)
	}
	p.holds(t, r.str("message_id"), 1, "coder", "reviewer", "tester")

	if r := call(t, b, "get_next_action", map[string]any{"session_token": tb}); r.str("action") != "get_pending_messages" {
		t.Fatalf("get_next_action: %s", r.text)
	}
	msgs := pendingOf(t, call(t, b, "get_pending_messages", map[string]any{"session_token": tb}))
	if len(msgs) != 1 || msgs[0]["target_group"] != "team" || fmt.Sprint(msgs[0]["receiver_ids"]) != "[reviewer tester]" {
		t.Fatalf("pending %v", msgs)
	}
	if r := call(t, b, "respond_chat", map[string]any{"session_token": tb, "content": "ok"}); r.isError || r.str("target_agent_id") != "coder" {
		t.Fatalf("respond_chat: %s", r.text)
	}
	tester, _, err := p.store.Unread(context.Background(), "tester", 10, true)
	if err != nil || len(tester) != 1 {
		t.Errorf("tester has %d unread (%v), want only the broadcast", len(tester), err)
	}

	r = call(t, a, "send_message", map[string]any{"session_token": ta, "target_agent_ids": []string{"tester", "lead"}, "content": "fyi"})
	if r.isError || len(r.data["receivers"].([]any)) != 2 {
		t.Fatalf("send_message to a list: %s", r.text)
	}
	groupRefusals(t, p, a, ta)
}

// groupRefusals: bad target lists are refused with their codes, and
// change nothing.
func groupRefusals(t *testing.T, p *project, a *mcp.ClientSession, ta string) {
	before := p.tree()
	for _, tc := range []struct {
		args map[string]any
		code string
	}{
		{map[string]any{"target_agent_ids": []string{"tester", "coder"}}, "cannot_message_self"},
		{map[string]any{"target_agent_ids": []string{"tester", "tester"}}, "duplicate_receiver"},
		{map[string]any{"target_agent_ids": []string{"tester"}, "target_agent_id": "lead"}, "too_many_targets"},
		{map[string]any{"target_group": "nope"}, "group_not_found"},
		{map[string]any{}, "agent_not_found"},
	} {
		tc.args["session_token"], tc.args["content"] = ta, "x"
		if r := call(t, a, "send_message", tc.args); r.code() != tc.code {
			t.Errorf("send_message %v: %s, want %s", tc.args, r.text, tc.code)
		}
	}
	if after := p.tree(); after != before {
		t.Errorf("refused sends changed files:\n%s\n---\n%s", before, after)
	}
}

// TestAutoStartConversation: auto_start_conversation starts a
// conversation with an AI agent that has no chat session, sends within an
// existing one, sends as it is to a live session, and is refused for a
// human or a group.
func TestAutoStartConversation(t *testing.T) {
	for _, proto := range groupProtocols {
		t.Run(proto, func(t *testing.T) { autoStartConversation(t, proto) })
	}
}

func autoStartConversation(t *testing.T, proto string) {
	p := newProject(t)
	p.withTester()
	a := p.connect(proto)
	ta := p.authenticate(a, "coder", "chat")
	args := func(extra map[string]any) map[string]any {
		m := map[string]any{"session_token": ta, "content": "shall we?", "auto_start_conversation": true}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	r := call(t, a, "send_message", args(map[string]any{"target_agent_id": "tester"}))
	cnv := r.str("conversation_id")
	if r.isError || r.str("auto_start") != fsstore.AutoStarted || cnv == "" {
		t.Fatalf("auto start: %s", r.text)
	}
	var c fsstore.Conversation
	p.doc(t, fsstore.Conversations, cnv, &c)
	if c.State != fsstore.ConvPending || c.Turns != 1 || c.Participant != "tester" {
		t.Errorf("conversation %+v", c)
	}
	// the watcher's rule: tester must be started for it
	if next, err := p.store.Work(context.Background(), p.cfg, "tester", fsstore.PurposeChat, nil); err != nil || !next.StartsSession(fsstore.PurposeChat) || next.Action != fsstore.ActConversationRequest {
		t.Errorf("tester's work = %+v, %v", next, err)
	}
	r = call(t, a, "send_message", args(map[string]any{"target_agent_id": "tester"}))
	if r.isError || r.str("auto_start") != fsstore.AutoExisting || r.str("conversation_id") != cnv {
		t.Fatalf("auto start again: %s", r.text)
	}
	b := p.connect(proto)
	p.authenticate(b, "reviewer", "chat")
	r = call(t, a, "send_message", args(map[string]any{"target_agent_id": "reviewer"}))
	if r.isError || r.str("auto_start") != fsstore.AutoLiveSession || r.str("conversation_id") != "" {
		t.Fatalf("auto start to a live session: %s", r.text)
	}
	before := p.tree()
	for _, extra := range []map[string]any{{"target_agent_id": "lead"}, {"target_group": "team"}, {"target_agent_ids": []string{"tester", "reviewer"}}} {
		if r := call(t, a, "send_message", args(extra)); r.code() != "auto_start_refused" {
			t.Errorf("auto start %v: %s", extra, r.text)
		}
	}
	if after := p.tree(); after != before {
		t.Errorf("refused auto starts changed files")
	}
}

// TestGroupConversation: three agents take turns in a fixed order; a turn
// out of order is refused naming whose turn it is; each turn reaches every
// other party; max_turns counts turns of the whole conversation; each
// party is told of the end once.
func TestGroupConversation(t *testing.T) {
	for _, proto := range groupProtocols {
		t.Run(proto, func(t *testing.T) { groupConversation(t, proto) })
	}
}

func groupConversation(t *testing.T, proto string) {
	p := newProject(t)
	p.withTester()
	cs := map[string]*clientSession{}
	for _, agent := range []string{"coder", "reviewer", "tester"} {
		c := p.connect(proto)
		cs[agent] = &clientSession{c, p.authenticate(c, agent, "chat")}
	}
	do := func(agent, tool string, args map[string]any) result {
		if args == nil {
			args = map[string]any{}
		}
		args["session_token"] = cs[agent].token
		return call(t, cs[agent].cs, tool, args)
	}
	groupStartRefusals(t, do)
	r := do("coder", "start_conversation", map[string]any{"participant_agent_ids": []string{"reviewer", "tester"}, "initial_message": "one", "max_turns": 5, "purpose": "count"})
	cnv := r.str("conversation_id")
	if r.isError || r.str("next_turn") != "reviewer" {
		t.Fatalf("start_conversation: %s", r.text)
	}
	groupTurns(t, p, do, cnv)
}

// groupStartRefusals: bad participant lists get their codes.
func groupStartRefusals(t *testing.T, do func(agent, tool string, args map[string]any) result) {
	for _, tc := range []struct {
		ids  []string
		code string
	}{
		{[]string{"reviewer"}, "agent_not_found"},
		{[]string{"reviewer", "coder"}, "cannot_conversation_with_self"},
		{[]string{"reviewer", "lead"}, "cannot_start_conversation_with_human"},
		{[]string{"reviewer", "reviewer"}, "duplicate_receiver"},
	} {
		if r := do("coder", "start_conversation", map[string]any{"participant_agent_ids": tc.ids}); r.code() != tc.code {
			t.Errorf("start with %v: %s, want %s", tc.ids, r.text, tc.code)
		}
	}
}

// groupTurns plays conversation cnv (coder, reviewer, tester; max_turns 5)
// to its end.
func groupTurns(t *testing.T, p *project, do func(agent, tool string, args map[string]any) result, cnv string) {
	// the same party set, in any order, by anyone: refused while open; a pair of them is not
	if r := do("tester", "start_conversation", map[string]any{"participant_agent_ids": []string{"coder", "reviewer"}}); r.code() != "conversation_already_active" {
		t.Errorf("second group conversation of the same parties: %s", r.text)
	}
	for _, agent := range []string{"reviewer", "tester"} {
		r := do(agent, "get_next_action", nil)
		if r.str("action") != "conversation_request" || fmt.Sprint(r.data["parties"]) != "[coder reviewer tester]" || r.str("next_turn") != "reviewer" {
			t.Fatalf("%s's get_next_action: %s", agent, r.text)
		}
	}
	var c fsstore.Conversation
	p.doc(t, fsstore.Conversations, cnv, &c)
	if c.State != fsstore.ConvActive || fmt.Sprint(c.Accepted) != "[reviewer tester]" || fmt.Sprint(c.Participants) != "[reviewer tester]" {
		t.Fatalf("after both accepted: %+v", c)
	}
	if r := do("tester", "send_conversation_message", map[string]any{"content": "three"}); r.code() != "not_your_turn" || !strings.Contains(r.text, "reviewer's turn") {
		t.Errorf("out of order: %s", r.text)
	}
	turn := func(agent, word string) result {
		t.Helper()
		msgs := pendingOf(t, do(agent, "get_pending_messages", nil))
		if len(msgs) == 0 {
			t.Fatalf("%s has no turn to read before %s", agent, word)
		}
		return do(agent, "send_conversation_message", map[string]any{"conversation_id": cnv, "content": word})
	}
	for i, step := range []struct{ agent, word, next string }{
		{"reviewer", "two", "tester"}, {"tester", "three", "coder"}, {"coder", "four", "reviewer"},
	} {
		r := turn(step.agent, step.word)
		if r.isError || r.str("next_turn") != step.next || r.data["turns"] != float64(i+2) {
			t.Fatalf("turn %d by %s: %s", i+2, step.agent, r.text)
		}
	}
	r := turn("reviewer", "five")
	if r.isError || r.str("status") != fsstore.ConvTerminating || r.str("reason") != fsstore.ReasonMaxTurns {
		t.Fatalf("last turn: %s", r.text)
	}
	// every party holds every turn: its own as sent, the others' as received
	p.holds(t, cnv, 5, "coder", "reviewer", "tester")
	toldOnce(t, p, do, cnv)
}

// toldOnce: each party of cnv is told of its end (max_turns) once, and
// then it is ended.
func toldOnce(t *testing.T, p *project, do func(agent, tool string, args map[string]any) result, cnv string) {
	var c fsstore.Conversation
	for _, agent := range []string{"coder", "reviewer", "tester"} {
		r := do(agent, "get_next_action", map[string]any{"wait_seconds": 1})
		if r.str("action") != "conversation_ended" || r.str("reason") != fsstore.ReasonMaxTurns {
			t.Errorf("%s: %s", agent, r.text)
		}
		if r := do(agent, "get_next_action", map[string]any{"wait_seconds": 1}); r.str("action") == "conversation_ended" {
			t.Errorf("%s told twice", agent)
		}
	}
	p.doc(t, fsstore.Conversations, cnv, &c)
	if c.State != fsstore.ConvEnded || len(c.Told) != 3 {
		t.Errorf("after all told: %+v", c)
	}
}

// TestGroupConversationLeave: a participant's end_conversation ends it for
// every party, each told once.
func TestGroupConversationLeave(t *testing.T) {
	p := newProject(t)
	p.withTester()
	cs := map[string]*clientSession{}
	for _, agent := range []string{"coder", "reviewer", "tester"} {
		c := p.connect("")
		cs[agent] = &clientSession{c, p.authenticate(c, agent, "chat")}
	}
	do := func(agent, tool string, args map[string]any) result {
		args["session_token"] = cs[agent].token
		return call(t, cs[agent].cs, tool, args)
	}
	r := do("coder", "start_conversation", map[string]any{"participant_agent_ids": []string{"reviewer", "tester"}, "initial_message": "hello"})
	cnv := r.str("conversation_id")
	do("reviewer", "get_next_action", map[string]any{})
	if r := do("tester", "end_conversation", map[string]any{"conversation_id": cnv}); r.isError || r.str("reason") != fsstore.ReasonParticipantEnded {
		t.Fatalf("end_conversation: %s", r.text)
	}
	for _, agent := range []string{"coder", "reviewer", "tester"} {
		if r := do(agent, "get_next_action", map[string]any{"wait_seconds": 1}); r.str("action") != "conversation_ended" {
			t.Errorf("%s: %s", agent, r.text)
		}
	}
	var c fsstore.Conversation
	p.doc(t, fsstore.Conversations, cnv, &c)
	if c.State != fsstore.ConvEnded {
		t.Errorf("state %s", c.State)
	}
}

// holds checks that each agent's chat log holds s exactly n times.
func (p *project) holds(t *testing.T, s string, n int, agents ...string) {
	t.Helper()
	for _, agent := range agents {
		path, _ := p.store.ChatPath(agent)
		data, _ := os.ReadFile(path)
		if got := strings.Count(string(data), s); got != n {
			t.Errorf("%s's chat log holds %s %d times, want %d", agent, s, got, n)
		}
	}
}

// clientSession is a connected client and its session token.
type clientSession struct {
	cs    *mcp.ClientSession
	token string
}
