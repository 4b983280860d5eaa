package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// shiritori is the word chain of seed 001's scenario: each word starts with
// the last kana of the one before, no word is used twice, and a word ending
// in ん loses.
var shiritoriWords = []string{
	"ごりら", "らっぱ", "ぱんだ", "だんご", "ごま", "まくら", "らくだ", "だるま", "まど", "どんぐり", "りす", "すいか", "かめ", "めだか",
}

func lastRune(s string) rune  { r, _ := utf8.DecodeLastRuneInString(s); return r }
func firstRune(s string) rune { r, _ := utf8.DecodeRuneInString(s); return r }

// shiritoriPlayer is one agent playing by the rules, driven only by what
// get_next_action tells it.
type shiritoriPlayer struct {
	t      *testing.T
	cs     *mcp.ClientSession
	token  string
	me     string
	rounds int // the initiator ends the conversation after this many rounds

	mu      *sync.Mutex
	used    map[string]bool // shared: words may not repeat across players
	chain   *[]string       // shared: the chain as it grows
	cnvID   string
	ended   []result // conversation_ended answers received
	request []result // conversation_request answers received
}

func (p *shiritoriPlayer) next(prev string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range shiritoriWords {
		if !p.used[w] && firstRune(w) == lastRune(prev) {
			p.used[w] = true
			*p.chain = append(*p.chain, w)
			return w
		}
	}
	p.t.Errorf("%s: no word left after %q", p.me, prev)
	return ""
}

// play follows get_next_action until it is told the conversation ended.
func (p *shiritoriPlayer) play(initiator bool) {
	for len(p.ended) == 0 {
		r := call(p.t, p.cs, "get_next_action", map[string]any{"session_token": p.token, "wait_seconds": 50})
		switch r.str("action") {
		case "wait_for_messages":
		case "conversation_request":
			p.request = append(p.request, r)
			p.cnvID = r.str("conversation_id")
		case "conversation_ended":
			p.ended = append(p.ended, r)
		case "get_pending_messages":
			got := call(p.t, p.cs, "get_pending_messages", map[string]any{"session_token": p.token})
			msgs, _ := got.data["pending_messages"].([]any)
			for _, m := range msgs {
				m := m.(map[string]any)
				word, _ := m["content"].(string)
				if m["conversation_id"] != p.cnvID {
					p.t.Errorf("%s: message %q carries conversation %v, want %s", p.me, word, m["conversation_id"], p.cnvID)
				}
				p.mu.Lock()
				chain := *p.chain
				if prev := chain[len(chain)-1]; word != prev || lastRune(word) == 'ん' {
					p.t.Errorf("%s: got %q, the chain says %q", p.me, word, prev)
				}
				rounds := len(chain) / 2
				p.mu.Unlock()
				if initiator && rounds == p.rounds {
					if e := call(p.t, p.cs, "end_conversation", map[string]any{"session_token": p.token}); e.isError || e.str("status") != "terminating" {
						p.t.Errorf("end_conversation: %s", e.text)
					}
					continue
				}
				s := call(p.t, p.cs, "send_conversation_message", map[string]any{"session_token": p.token, "content": p.next(word)})
				if s.isError || s.str("conversation_id") != p.cnvID {
					p.t.Errorf("%s: send_conversation_message: %s", p.me, s.text)
				}
			}
		default:
			p.t.Errorf("%s: unexpected action: %s", p.me, r.text)
			return
		}
	}
}

// Seed 001's scenario with two real MCP clients, each with its own aipm
// serve process: A starts a conversation, B's waiting get_next_action
// returns conversation_request, they play six rounds of shiritori, A ends
// it, each is told exactly once, and the file ends `ended` with its history.
func TestConversationShiritori(t *testing.T) {
	p := newProject(t)
	a := p.connect("")
	waiting := &lineWatch{want: "msg=waiting", seen: make(chan struct{})}
	b := p.connectWith("", []string{"AIPM_LOG=debug"}, waiting)
	ta := p.authenticate(a, "coder", "chat")
	tb := p.authenticate(b, "reviewer", "chat")

	got := make(chan result, 1)
	go func() { got <- call(t, b, "get_next_action", map[string]any{"session_token": tb, "wait_seconds": 50}) }()
	<-waiting.seen // B waits; only a wake can answer it now

	start := time.Now()
	r := call(t, a, "start_conversation", map[string]any{
		"session_token": ta, "target_agent_id": "reviewer", "purpose": "shiritori, 6 rounds", "initial_message": "りんご",
	})
	// B may take it before A's answer is written: pending or active.
	if r.isError || (r.str("status") != "pending" && r.str("status") != "active") || r.str("message_id") == "" {
		t.Fatalf("start_conversation: %s", r.text)
	}
	cnv := r.str("conversation_id")
	req := <-got
	t.Logf("start_conversation issued -> B's waiting get_next_action returned: %s", time.Since(start))
	if req.str("action") != "conversation_request" || req.str("conversation_id") != cnv || req.str("from_agent_id") != "coder" ||
		req.str("purpose") != "shiritori, 6 rounds" || req.str("state") != "active" || !strings.Contains(req.str("instruction"), "send_conversation_message") {
		t.Fatalf("B's get_next_action: %s", req.text)
	}

	var mu sync.Mutex
	used, chain := map[string]bool{"りんご": true}, []string{"りんご"}
	pa := &shiritoriPlayer{t: t, cs: a, token: ta, me: "coder", rounds: 6, mu: &mu, used: used, chain: &chain, cnvID: cnv}
	pb := &shiritoriPlayer{t: t, cs: b, token: tb, me: "reviewer", mu: &mu, used: used, chain: &chain, cnvID: cnv, request: []result{req}}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); pa.play(true) }()
	go func() { defer wg.Done(); pb.play(false) }()
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	checkChain(t, chain)
	checkToldOnce(t, cnv, pa, pb)
	if len(pb.request) != 1 {
		t.Fatalf("B got %d conversation requests", len(pb.request))
	}
	checkShiritoriRecord(t, p, cnv, chain)
}

// checkChain: six rounds of shiritori, each word starting with the last
// sound of the one before.
func checkChain(t *testing.T, chain []string) {
	t.Helper()
	if len(chain) != 12 {
		t.Fatalf("chain has %d words, want 12 (6 rounds): %v", len(chain), chain)
	}
	for i := 1; i < len(chain); i++ {
		if firstRune(chain[i]) != lastRune(chain[i-1]) {
			t.Fatalf("chain broken at %q -> %q", chain[i-1], chain[i])
		}
	}
}

// checkToldOnce: each player was told once that the initiator ended
// conversation cnv, and a further look finds nothing more.
func checkToldOnce(t *testing.T, cnv string, players ...*shiritoriPlayer) {
	t.Helper()
	for _, pl := range players {
		if len(pl.ended) != 1 {
			t.Fatalf("%s was told of the end %d times", pl.me, len(pl.ended))
		}
		e := pl.ended[0]
		if e.str("conversation_id") != cnv || e.str("reason") != "initiator_ended" || e.str("ended_by") != "coder" {
			t.Fatalf("%s's conversation_ended: %s", pl.me, e.text)
		}
		// Told once: the next look finds nothing more.
		if r := call(t, pl.cs, "get_next_action", map[string]any{"session_token": pl.token, "wait_seconds": 1}); r.str("action") != "wait_for_messages" {
			t.Fatalf("%s after the end: %s", pl.me, r.text)
		}
	}
}

// checkShiritoriRecord: the conversation file ends ended, with its
// history, and both chat files hold the whole chain in order.
func checkShiritoriRecord(t *testing.T, p *project, cnv string, chain []string) {
	t.Helper()
	c := readConversation(t, p, cnv)
	if c.State != fsstore.ConvEnded || c.Turns != 12 || c.EndReason != fsstore.ReasonInitiatorEnded || c.EndedBy != "coder" || len(c.Told) != 2 {
		t.Fatalf("conversation file: %+v", c)
	}
	var states []string
	for _, h := range c.History {
		states = append(states, h.State+"/"+h.By)
	}
	if want := []string{"pending/coder", "active/reviewer", "terminating/coder"}; !slices.Equal(states[:3], want) || len(states) != 4 || c.History[3].State != "ended" {
		t.Fatalf("history %v, want %v then ended", states, want)
	}
	// Both chat files hold the whole conversation, in order.
	for _, agent := range []string{"coder", "reviewer"} {
		var words []string
		for _, m := range chatLines(t, p, agent) {
			if m.ConversationID == cnv {
				words = append(words, m.Content)
			}
		}
		if !slices.Equal(words, chain) {
			t.Fatalf("%s's chat.jsonl holds %v, want %v", agent, words, chain)
		}
	}
}

// At max_turns the conversation stops taking turns, the response says so,
// and both parties are told (reason max_turns); as the limit nears,
// responses remind the agent to end it. send_message between the two
// parties attaches the conversation by itself.
func TestConversationMaxTurns(t *testing.T) {
	p := newProject(t)
	a, b := p.connect(""), p.connect("")
	ta := p.authenticate(a, "coder", "chat")
	tb := p.authenticate(b, "reviewer", "chat")
	cnv := threeTurns(t, a, b, ta, tb)
	before := p.tree()
	if r := call(t, b, "send_conversation_message", map[string]any{"session_token": tb, "conversation_id": cnv, "content": "fourth"}); r.code() != "conversation_not_active" {
		t.Fatalf("a turn past max_turns: %s", r.text)
	}
	if r := call(t, b, "send_conversation_message", map[string]any{"session_token": tb, "content": "fourth"}); r.code() != "no_active_conversation" {
		t.Fatalf("a turn past max_turns without id: %s", r.text)
	}
	if p.tree() != before {
		t.Fatal("a refused turn changed .ai-pm")
	}
	toldMaxTurns(t, a, b, ta, tb)
	if c := readConversation(t, p, cnv); c.State != fsstore.ConvEnded || c.Turns != 3 {
		t.Fatalf("conversation: %+v", c)
	}
	// Once it is over, the two talk outside conversations again.
	if r := call(t, a, "send_message", map[string]any{"session_token": ta, "target_agent_id": "reviewer", "content": "thanks"}); r.isError || r.str("conversation_id") != "" {
		t.Fatalf("send_message after the end: %s", r.text)
	}
}

// threeTurns starts a conversation of A (session ta) with B (tb) of at
// most 3 turns and plays them, checking what each response says; it
// returns the conversation's id.
func threeTurns(t *testing.T, a, b *mcp.ClientSession, ta, tb string) string {
	t.Helper()
	r := call(t, a, "start_conversation", map[string]any{"session_token": ta, "target_agent_id": "reviewer", "max_turns": 3})
	cnv := r.str("conversation_id")
	if r.isError || r.data["turns"] != 0.0 || r.data["turns_left"] != 3.0 {
		t.Fatalf("start_conversation: %s", r.text)
	}
	// A plain send_message between the parties is a turn of their conversation.
	r = call(t, a, "send_message", map[string]any{"session_token": ta, "target_agent_id": "reviewer", "content": "first"})
	if r.isError || r.str("conversation_id") != cnv || r.data["turns_left"] != 2.0 || !strings.Contains(r.str("instruction"), "Only 2 of 3 turns left") {
		t.Fatalf("send_message in a conversation: %s", r.text)
	}
	if r := call(t, b, "get_next_action", map[string]any{"session_token": tb}); r.str("action") != "conversation_request" {
		t.Fatalf("B: %s", r.text)
	}
	r = call(t, b, "send_conversation_message", map[string]any{"session_token": tb, "content": "second"})
	if r.isError || r.data["turns_left"] != 1.0 || !strings.Contains(r.str("instruction"), "end_conversation") {
		t.Fatalf("second turn: %s", r.text)
	}
	r = call(t, a, "respond_conversation_message", map[string]any{"session_token": ta, "conversation_id": cnv, "content": "third"})
	if r.isError || r.str("status") != "terminating" || r.str("reason") != "max_turns" || !strings.Contains(r.str("instruction"), "reached max_turns (3)") {
		t.Fatalf("last turn: %s", r.text)
	}
	return cnv
}

// toldMaxTurns: the end (reason max_turns) comes before the unread turn,
// once for each party.
func toldMaxTurns(t *testing.T, a, b *mcp.ClientSession, ta, tb string) {
	t.Helper()
	for _, pc := range []struct {
		cs    *mcp.ClientSession
		token string
		after string
	}{{b, tb, "get_pending_messages"}, {a, ta, "get_pending_messages"}} {
		r := call(t, pc.cs, "get_next_action", map[string]any{"session_token": pc.token})
		if r.str("action") != "conversation_ended" || r.str("reason") != "max_turns" || r.str("ended_by") != "coder" {
			t.Fatalf("get_next_action: %s", r.text)
		}
		if r := call(t, pc.cs, "get_next_action", map[string]any{"session_token": pc.token}); r.str("action") != pc.after {
			t.Fatalf("after conversation_ended: %s", r.text)
		}
	}
}

// Two processes start A->B and B->A at the same instant: exactly one
// succeeds, the other gets conversation_already_active. CONVERSATION_RACES
// sets the number of rounds (default 25).
func TestConversationUniquenessRace(t *testing.T) {
	rounds := 25
	if n, err := strconv.Atoi(os.Getenv("CONVERSATION_RACES")); err == nil {
		rounds = n
	}
	p := newProject(t)
	a, b := p.connect(""), p.connect("")
	ta := p.authenticate(a, "coder", "chat")
	tb := p.authenticate(b, "reviewer", "chat")
	wins := map[string]int{}
	for i := 0; i < rounds; i++ {
		var wg sync.WaitGroup
		var ra, rb result
		go1 := make(chan struct{})
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-go1
			ra = call(t, a, "start_conversation", map[string]any{"session_token": ta, "target_agent_id": "reviewer"})
		}()
		go func() {
			defer wg.Done()
			<-go1
			rb = call(t, b, "start_conversation", map[string]any{"session_token": tb, "target_agent_id": "coder"})
		}()
		close(go1)
		wg.Wait()
		var winner result
		var winCS *mcp.ClientSession
		var winToken string
		switch {
		case !ra.isError && rb.code() == "conversation_already_active":
			winner, winCS, winToken = ra, a, ta
			wins["coder"]++
		case !rb.isError && ra.code() == "conversation_already_active":
			winner, winCS, winToken = rb, b, tb
			wins["reviewer"]++
		default:
			t.Fatalf("round %d: A->B %q, B->A %q: want exactly one success", i, ra.text, rb.text)
		}
		cnv := winner.str("conversation_id")
		if !strings.Contains(ra.text+rb.text, cnv) {
			t.Fatalf("round %d: the refusal does not name %s: %s / %s", i, cnv, ra.text, rb.text)
		}
		if r := call(t, winCS, "end_conversation", map[string]any{"session_token": winToken}); r.isError {
			t.Fatalf("round %d: end: %s", i, r.text)
		}
		for _, pc := range []struct {
			cs    *mcp.ClientSession
			token string
		}{{a, ta}, {b, tb}} {
			if r := call(t, pc.cs, "get_next_action", map[string]any{"session_token": pc.token, "wait_seconds": 1}); r.str("action") != "conversation_ended" {
				t.Fatalf("round %d: %s", i, r.text)
			}
		}
	}
	t.Logf("%d rounds, wins %v", rounds, wins)
	var idx struct {
		Pairs map[string][]string `json:"pairs"`
	}
	data, _ := os.ReadFile(p.store.CollectionDir(fsstore.Conversations) + "/index.json")
	if err := json.Unmarshal(data, &idx); err != nil || len(idx.Pairs) != 0 {
		t.Fatalf("index after every conversation ended: %s (%v)", data, err)
	}
}

// Timeouts hold with no watcher running: whoever reads a conversation past
// its deadline applies them, and a waiting get_next_action wakes at the
// deadline.
func TestConversationTimeouts(t *testing.T) {
	p := newProject(t)
	setDefaults(t, p, `conversation_pending_timeout = "300ms"`, `conversation_active_timeout = "300ms"`)
	a := p.connect("")
	ta := p.authenticate(a, "coder", "chat")

	// Pending, never taken: expired, and the initiator is told.
	r := call(t, a, "start_conversation", map[string]any{"session_token": ta, "target_agent_id": "reviewer"})
	expired := r.str("conversation_id")
	r = call(t, a, "get_next_action", map[string]any{"session_token": ta, "wait_seconds": 30})
	if r.str("action") != "conversation_ended" || r.str("conversation_id") != expired || r.str("reason") != "expired" || r.str("state") != "expired" {
		t.Fatalf("initiator of a request nobody took: %s", r.text)
	}
	b := p.connect("")
	tb := p.authenticate(b, "reviewer", "chat")
	if r := call(t, b, "get_next_action", map[string]any{"session_token": tb, "wait_seconds": 1}); r.str("action") != "wait_for_messages" {
		t.Fatalf("participant of an expired request: %s", r.text)
	}

	// Active, no turn: terminating (timeout), both told, then ended.
	r = call(t, a, "start_conversation", map[string]any{"session_token": ta, "target_agent_id": "reviewer"})
	active := r.str("conversation_id")
	if r.isError {
		t.Fatalf("a new conversation after the expired one: %s", r.text)
	}
	if r := call(t, b, "get_next_action", map[string]any{"session_token": tb}); r.str("action") != "conversation_request" {
		t.Fatalf("B: %s", r.text)
	}
	for _, pc := range []struct {
		cs    *mcp.ClientSession
		token string
	}{{a, ta}, {b, tb}} {
		r := call(t, pc.cs, "get_next_action", map[string]any{"session_token": pc.token, "wait_seconds": 30})
		if r.str("action") != "conversation_ended" || r.str("conversation_id") != active || r.str("reason") != "timeout" || r.str("ended_by") != "system" {
			t.Fatalf("active conversation without a turn: %s", r.text)
		}
	}
	if c := readConversation(t, p, expired); c.State != fsstore.ConvExpired || !slices.Equal(c.Told, []string{"coder"}) {
		t.Fatalf("expired conversation: %+v", c)
	}
	if c := readConversation(t, p, active); c.State != fsstore.ConvEnded || c.EndReason != fsstore.ReasonTimeout {
		t.Fatalf("timed-out conversation: %+v", c)
	}
}

// A session that ends mid-conversation (its aipm serve process exits) ends
// the conversation with session_expired; the other party's waiting
// get_next_action is told at once.
func TestConversationEndsWithSession(t *testing.T) {
	p := newProject(t)
	a := p.connect("")
	waiting := &lineWatch{want: "msg=waiting", seen: make(chan struct{})}
	b := p.connectWith("", []string{"AIPM_LOG=debug"}, waiting)
	ta := p.authenticate(a, "coder", "chat")
	tb := p.authenticate(b, "reviewer", "chat")
	cnv := call(t, a, "start_conversation", map[string]any{"session_token": ta, "target_agent_id": "reviewer"}).str("conversation_id")
	if r := call(t, b, "get_next_action", map[string]any{"session_token": tb}); r.str("action") != "conversation_request" {
		t.Fatalf("B: %s", r.text)
	}
	got := make(chan result, 1)
	go func() { got <- call(t, b, "get_next_action", map[string]any{"session_token": tb, "wait_seconds": 50}) }()
	<-waiting.seen
	a.Close() // A's client goes away: its aipm serve exits
	r := <-got
	if r.str("action") != "conversation_ended" || r.str("conversation_id") != cnv || r.str("reason") != "session_expired" || r.str("ended_by") != "coder" {
		t.Fatalf("B after A's session ended: %s", r.text)
	}
	c := readConversation(t, p, cnv)
	if c.State != fsstore.ConvEnded || c.EndReason != fsstore.ReasonSessionExpired {
		t.Fatalf("conversation: %+v", c)
	}
	id, _, _ := strings.Cut(ta, ".")
	var ses fsstore.Session
	if p.doc(t, fsstore.Sessions, id, &ses); ses.EndReason != fsstore.EndExited {
		t.Fatalf("A's session: %+v", ses)
	}
}

// A waiting get_next_action answers exit the moment its session ends
// (here: replaced by a new session of the same agent and purpose).
func TestWaitingNextActionExitsWhenReplaced(t *testing.T) {
	p := newProject(t)
	waiting := &lineWatch{want: "msg=waiting", seen: make(chan struct{})}
	cs := p.connectWith("", []string{"AIPM_LOG=debug"}, waiting)
	token := p.authenticate(cs, "reviewer", "chat")
	got := make(chan result, 1)
	go func() {
		got <- call(t, cs, "get_next_action", map[string]any{"session_token": token, "wait_seconds": 50})
	}()
	<-waiting.seen
	other := p.connect("")
	p.authenticate(other, "reviewer", "chat")
	if r := <-got; r.str("action") != "exit" || !strings.Contains(r.str("instruction"), "replaced") {
		t.Fatalf("waiting call of a replaced session: %s", r.text)
	}
}

// Every error code of seed 001's table (and the limits), each with a clear
// message, and nothing changed on disk.
func TestConversationErrors(t *testing.T) {
	p := newProject(t)
	p.addAgent("tester", fsstore.AgentAI)
	os.MkdirAll(filepath.Join(p.store.Root(), "agents", "former"), 0o755) // an agent removed from the config
	a := p.connect("")
	ta := p.authenticate(a, "coder", "chat")
	tb := p.authenticate(a, "reviewer", "chat")
	tc := p.authenticate(a, "tester", "chat")
	p.taskInProgress("tester", "read a conversation")
	tcTask := p.authenticate(a, "tester", "task")
	p.taskInProgress("coder", "work")
	taTask := p.authenticate(a, "coder", "task")
	cnv := call(t, a, "start_conversation", map[string]any{"session_token": ta, "target_agent_id": "reviewer", "initial_message": "hi"}).str("conversation_id")
	if cnv == "" {
		t.Fatal("no conversation")
	}
	missing := "cnv_01M7YZWACRA0328GMTHNDHB18Z"
	before := p.tree()
	for _, tc := range []struct {
		tool  string
		token string
		args  map[string]any
		want  string // prefix of the error text
	}{
		{"start_conversation", ta, map[string]any{"target_agent_id": "coder"}, "cannot_conversation_with_self: you cannot start a conversation with yourself"},
		{"start_conversation", ta, map[string]any{"target_agent_id": "lead"}, "cannot_start_conversation_with_human: lead is a human"},
		{"start_conversation", ta, map[string]any{"target_agent_id": "ghost"}, "agent_not_found: there is no agent \"ghost\""},
		{"start_conversation", ta, map[string]any{"target_agent_id": "../etc"}, "agent_not_found: agent id \"../etc\" is invalid"},
		{"start_conversation", ta, map[string]any{"target_agent_id": "former"}, "target_agent_not_in_project: agent \"former\" is no longer configured"},
		{"start_conversation", tb, map[string]any{"target_agent_id": "coder"}, "conversation_already_active: a conversation between reviewer and coder is already pending (" + cnv},
		{"start_conversation", ta, map[string]any{"target_agent_id": "reviewer"}, "conversation_already_active"},
		{"start_conversation", tc, map[string]any{"target_agent_id": "coder", "max_turns": 1}, "invalid_max_turns: max_turns 1 is out of range: use 2 to 40"},
		{"start_conversation", tc, map[string]any{"target_agent_id": "coder", "max_turns": 41}, "invalid_max_turns"},
		{"start_conversation", tc, map[string]any{"target_agent_id": "coder", "initial_message": strings.Repeat("x", 4001)}, "content_too_long"},
		{"start_conversation", tc, map[string]any{"target_agent_id": "coder", "purpose": strings.Repeat("x", 1001)}, "purpose_too_long"},
		{"start_conversation", taTask, map[string]any{"target_agent_id": "reviewer"}, "wrong_session_purpose: start_conversation needs a chat session"},
		{"end_conversation", ta, map[string]any{"conversation_id": missing}, "conversation_not_found: conversation " + missing + " does not exist"},
		{"end_conversation", ta, map[string]any{"conversation_id": "cnv_../../x"}, "conversation_not_found"},
		{"end_conversation", tc, map[string]any{}, "no_active_conversation: you have no pending or active conversation"},
		{"send_conversation_message", tc, map[string]any{"content": "x"}, "no_active_conversation"},
		{"end_conversation", tc, map[string]any{"conversation_id": cnv}, "not_conversation_participant: conversation " + cnv + " is between coder and reviewer, not you"},
		{"send_conversation_message", tc, map[string]any{"conversation_id": cnv, "content": "x"}, "not_conversation_participant"},
		{"send_message", tc, map[string]any{"target_agent_id": "coder", "conversation_id": cnv, "content": "x"}, "not_conversation_participant"},
		{"get_conversation_messages", tcTask, map[string]any{"conversation_id": cnv}, "not_conversation_participant"},
		{"get_conversation_messages", taTask, map[string]any{"conversation_id": missing}, "conversation_not_found"},
		{"send_message", ta, map[string]any{"target_agent_id": "lead", "conversation_id": cnv, "content": "x"}, "not_conversation_participant: conversation " + cnv + " is between coder and reviewer: send to reviewer"},
		{"send_conversation_message", ta, map[string]any{"content": strings.Repeat("x", 4001)}, "content_too_long"},
	} {
		args := map[string]any{"session_token": tc.token}
		for k, v := range tc.args {
			args[k] = v
		}
		r := call(t, a, tc.tool, args)
		if !r.isError || !strings.HasPrefix(r.text, tc.want) {
			t.Errorf("%s %v:\n got %q\nwant prefix %q", tc.tool, tc.args, r.text, tc.want)
		}
	}
	if p.tree() != before {
		t.Fatal("a refused call changed .ai-pm")
	}
	// The party's task session reads the conversation from its own chat file.
	r := call(t, a, "get_conversation_messages", map[string]any{"session_token": taTask, "conversation_id": cnv})
	msgs, _ := r.data["messages"].([]any)
	if r.isError || len(msgs) != 1 || r.str("status") != "pending" {
		t.Fatalf("get_conversation_messages: %s", r.text)
	}
}

// A task session's get_next_action waits when its task is not in progress
// (here: the agent blocked it itself), and is woken the moment someone
// moves the task back.
func TestTaskSessionWaitsAndWakes(t *testing.T) {
	p := newProject(t)
	task := p.taskInProgress("coder", "needs an answer")
	waiting := &lineWatch{want: "msg=waiting", seen: make(chan struct{})}
	cs := p.connectWith("", []string{"AIPM_LOG=debug"}, waiting)
	token := p.authenticate(cs, "coder", "task")
	if r := call(t, cs, "update_task_status", map[string]any{"session_token": token, "status": "blocked", "reason": "which database?"}); r.isError {
		t.Fatalf("block: %s", r.text)
	}
	got := make(chan result, 1)
	go func() {
		got <- call(t, cs, "get_next_action", map[string]any{"session_token": token, "wait_seconds": 50})
	}()
	<-waiting.seen
	if _, err := p.store.UpdateTask(context.Background(), p.cfg, task.ID, "lead", fsstore.TaskChange{Status: fsstore.StatusInProgress}); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.str("action") != "work" || !strings.Contains(r.str("instruction"), task.ID) {
		t.Fatalf("woken task session: %s", r.text)
	}
	if r := call(t, cs, "update_task_status", map[string]any{"session_token": token, "status": "todo"}); r.isError {
		t.Fatalf("todo: %s", r.text)
	}
	if r := call(t, cs, "get_next_action", map[string]any{"session_token": token, "wait_seconds": 1}); r.str("action") != "wait_for_task" {
		t.Fatalf("task in todo: %s", r.text)
	}
}

func readConversation(t *testing.T, p *project, id string) fsstore.Conversation {
	t.Helper()
	path, _ := p.store.DocPath(fsstore.Conversations, id)
	var c fsstore.Conversation
	if err := readDoc(path, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func chatLines(t *testing.T, p *project, agent string) []fsstore.Message {
	t.Helper()
	path, _ := p.store.ChatPath(agent)
	recs, bad, _, err := fsstore.ReadAll(path)
	if err != nil || len(bad) > 0 {
		t.Fatalf("%s: %v %v", path, err, bad)
	}
	var out []fsstore.Message
	for _, r := range recs {
		var m fsstore.Message
		if err := json.Unmarshal(r.Data, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// setDefaults adds lines to the config's [defaults] table.
func setDefaults(t testing.TB, p *project, lines ...string) {
	setConfig(t, p, "[defaults]\n", "[defaults]\n"+strings.Join(lines, "\n")+"\n")
}

// setConfig replaces old with replacement in the config.
func setConfig(t testing.TB, p *project, old, replacement string) {
	t.Helper()
	data, err := os.ReadFile(p.store.ConfigPath())
	if err != nil {
		t.Fatal(err)
	}
	out := strings.Replace(string(data), old, replacement, 1)
	if err := os.WriteFile(p.store.ConfigPath(), []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	if p.cfg, err = p.store.LoadConfig(); err != nil {
		t.Fatal(err)
	}
}

// addAgent adds an agent to the project and remembers its passkey.
func (p *project) addAgent(id, typ string) {
	p.t.Helper()
	key, err := p.store.AddAgent(context.Background(), fsstore.NewAgent{ID: id, Type: typ})
	if err != nil {
		p.t.Fatal(err)
	}
	p.passkeys[id] = key
	if p.cfg, err = p.store.LoadConfig(); err != nil {
		p.t.Fatal(err)
	}
}

// Seed 001: a chat session reads a conversation it held before, and the
// next request between the same agents names it.
func TestConversationLooksBack(t *testing.T) {
	p := newProject(t)
	a, b := p.connect(""), p.connect("")
	ta := p.authenticate(a, "coder", "chat")
	tb := p.authenticate(b, "reviewer", "chat")
	cnv := threeTurns(t, a, b, ta, tb)
	toldMaxTurns(t, a, b, ta, tb)
	r := call(t, b, "get_conversation_messages", map[string]any{"session_token": tb, "conversation_id": cnv})
	if r.isError || r.str("conversation_id") != cnv || len(r.data["messages"].([]any)) != 3 {
		t.Fatalf("a chat session reading its earlier conversation: %s", r.text)
	}
	if r := call(t, a, "start_conversation", map[string]any{"session_token": ta, "target_agent_id": "reviewer", "purpose": "the follow-up"}); r.isError {
		t.Fatalf("start_conversation: %s", r.text)
	}
	r = call(t, b, "get_next_action", map[string]any{"session_token": tb})
	if r.str("action") != "conversation_request" || r.str("previous_conversation_id") != cnv || !strings.Contains(r.str("instruction"), "get_conversation_messages("+cnv+")") {
		t.Fatalf("the next request does not name %s: %s", cnv, r.text)
	}
	next := r.str("conversation_id")

	// Without an id: the caller's conversations, newest first, paged; the
	// new one names the last.
	r = call(t, b, "get_conversation_messages", map[string]any{"session_token": tb})
	convs, _ := r.data["conversations"].([]any)
	if r.isError || len(convs) != 2 || convs[0].(map[string]any)["id"] != next || convs[1].(map[string]any)["id"] != cnv || r.data["has_more"] != false {
		t.Fatalf("the reviewer's conversations: %s", r.text)
	}
	r = call(t, b, "get_conversation_messages", map[string]any{"session_token": tb, "limit": 1})
	if convs, _ := r.data["conversations"].([]any); len(convs) != 1 || r.data["has_more"] != true {
		t.Fatalf("one page of one: %s", r.text)
	}
	r = call(t, b, "get_conversation_messages", map[string]any{"session_token": tb, "conversation_id": next})
	if r.isError || r.str("previous_conversation_id") != cnv {
		t.Fatalf("the new conversation does not name the last: %s", r.text)
	}
	// Someone who took part in neither lists none and reads neither.
	p.addAgent("outsider", fsstore.AgentAI)
	lead := p.connect("")
	tl := p.authenticate(lead, "outsider", "chat")
	if r := call(t, lead, "get_conversation_messages", map[string]any{"session_token": tl}); r.isError || len(r.data["conversations"].([]any)) != 0 {
		t.Fatalf("an outsider's conversations: %s", r.text)
	}
	if r := call(t, lead, "get_conversation_messages", map[string]any{"session_token": tl, "conversation_id": cnv}); !r.isError {
		t.Fatalf("an outsider read %s: %s", cnv, r.text)
	}
}
