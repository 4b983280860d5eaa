// Package sim is a simulated agent: a real MCP client of aipm serve that
// follows get_next_action mechanically (aipm sim). It answers messages,
// plays shiritori in kana and a word chain in English, accepts conversations, delegates
// talk from a task session and carries delegations out in a chat session,
// obeys interrupts, reports task work done, and exits when told. The demo and the
// end-to-end tests use it to run the whole system without a model.
package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure one simulated agent process.
type Options struct {
	Exe string // the aipm binary whose serve the sim talks to
	// Server, when set, is the MCP server's command line instead of
	// "Exe --dir ProjectDir serve": the entry a client was given, which
	// holds the credential itself (Passkey "" then).
	Server     []string
	ProjectDir string
	Agent      string
	Passkey    string
	Purpose    string // "" lets authenticate choose
	// Out receives one line per step (the transcript).
	Out io.Writer
	// Step is the pause between two steps of task work.
	Step time.Duration
	// ServeStderr receives aipm serve's log (nil: discarded).
	ServeStderr io.Writer
	// Between, when set, runs after each step of task work but the last
	// (a get_task each), before the pause: what a client does between
	// two of its model's aipm calls (the tests' fake clients call their
	// hooks there).
	Between func(ctx context.Context, task string, step int)
}

type agent struct {
	o       Options
	cs      *mcp.ClientSession
	token   string
	purpose string // of the session authenticate opened
	// used holds the shiritori words of each conversation.
	used map[string]map[string]bool
	// chain holds the words of each conversation in the order played.
	chain map[string][]string
	// carries maps a conversation to the delegation it carries out.
	carries map[string]string
	// ended holds the conversations this agent was told have ended.
	ended map[string]bool
	// order holds the turn order of each group conversation (groups.go).
	order map[string][]string
}

// ErrInterrupted is returned when the agent stopped on an interrupt.
var errInterrupt = errors.New("interrupted")

// Run connects to a new aipm serve, authenticates, and follows
// get_next_action until told to exit.
func Run(ctx context.Context, o Options) error {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Step == 0 {
		o.Step = 20 * time.Millisecond
	}
	cmd := exec.Command(o.Exe, "--dir", o.ProjectDir, "serve")
	if len(o.Server) > 0 {
		cmd = exec.Command(o.Server[0], o.Server[1:]...)
		cmd.Dir = o.ProjectDir
	}
	cmd.Env = os.Environ()
	cmd.Stderr = o.ServeStderr
	client := mcp.NewClient(&mcp.Implementation{Name: "aipm-sim", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil)
	if err != nil {
		return fmt.Errorf("sim %s: connect to aipm serve: %w", o.Agent, err)
	}
	defer cs.Close()
	a := &agent{o: o, cs: cs, used: map[string]map[string]bool{}, carries: map[string]string{}, chain: map[string][]string{}, ended: map[string]bool{}, order: map[string][]string{}}
	return a.loop(ctx)
}

func (a *agent) say(format string, args ...any) {
	fmt.Fprintf(a.o.Out, "%s: %s\n", a.o.Agent, fmt.Sprintf(format, args...))
}

type result struct {
	data    map[string]any
	text    string
	isError bool
}

func (r result) str(k string) string { s, _ := r.data[k].(string); return s }

func (a *agent) call(ctx context.Context, tool string, args map[string]any) (result, error) {
	if a.token != "" {
		args["session_token"] = a.token
	}
	res, err := a.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return result{}, fmt.Errorf("%s: %w", tool, err)
	}
	var r result
	r.isError = res.IsError
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			r.text += t.Text
		}
	}
	if res.StructuredContent != nil {
		data, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(data, &r.data)
	}
	if r.isError && strings.HasPrefix(r.text, "INTERRUPT") {
		return r, a.obey(ctx, r.text)
	}
	return r, nil
}

// obey is the reaction to an interrupt, as the notice tells a session of
// its purpose: read it; a task session reports its task blocked, a chat
// session logs out; then stop.
func (a *agent) obey(ctx context.Context, notice string) error {
	a.say("interrupted: %s", firstSentence(notice))
	a.call(ctx, "get_notifications", map[string]any{})
	return a.comply(ctx, notice)
}

// comply does what an interrupt's notice (or its notification's
// instruction) says, once it is read.
func (a *agent) comply(ctx context.Context, notice string) error {
	tool, args, done := "logout", map[string]any{}, "logged out"
	if a.purpose == "task" {
		tool, args, done = "report_completed", map[string]any{"result": "blocked", "summary": "stopped on an interrupt"}, "reported blocked"
	}
	if !strings.Contains(notice, tool) {
		return fmt.Errorf("the interrupt notice of a %s session does not name %s: %s", a.purpose, tool, notice)
	}
	r, err := a.call(ctx, tool, args)
	if err != nil {
		return err
	}
	if r.isError {
		return fmt.Errorf("%s: %s", tool, r.text)
	}
	a.say("%s", done)
	return errInterrupt
}

// sessionOver says whether a refusal means the session ended: the agent's
// cue to exit.
func sessionOver(text string) bool {
	for _, code := range []string{"session_ended", "session_expired", "invalid_session"} {
		if strings.HasPrefix(text, code) {
			return true
		}
	}
	return false
}

func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i > 0 {
		return s[:i+1]
	}
	return s
}

func (a *agent) loop(ctx context.Context) error {
	args := map[string]any{"agent_id": a.o.Agent}
	if a.o.Passkey != "" {
		args["passkey"] = a.o.Passkey
	}
	if a.o.Purpose != "" {
		args["purpose"] = a.o.Purpose
	}
	r, err := a.call(ctx, "authenticate", args)
	if err != nil {
		return err
	}
	if r.isError {
		return fmt.Errorf("authenticate: %s", r.text)
	}
	a.token, a.purpose = r.str("session_token"), r.str("purpose")
	a.say("authenticated (%s session)", a.purpose)
	for {
		r, err := a.call(ctx, "get_next_action", map[string]any{})
		if errors.Is(err, errInterrupt) {
			return nil
		}
		if err != nil {
			return err
		}
		if r.isError && sessionOver(r.text) {
			a.say("session over: %s", firstSentence(r.text))
			return nil // ended from outside (logout by a person, expiry, replacement): exit as told
		}
		if r.isError {
			return fmt.Errorf("get_next_action: %s", r.text)
		}
		err = a.act(ctx, r)
		switch {
		case errors.Is(err, errInterrupt):
			return nil
		case errors.Is(err, errDone):
			return nil
		case err != nil:
			return err
		}
	}
}

var errDone = errors.New("done")

// claim takes the ready task an idle chat session is offered; another
// agent's claim first is no failure: the next answer says what is left.
func (a *agent) claim(ctx context.Context, r result) error {
	task, _ := r.data["task"].(map[string]any)
	id, _ := task["id"].(string)
	got, err := a.call(ctx, "claim_task", map[string]any{"task_id": id})
	if err != nil {
		return err
	}
	if got.isError {
		a.say("did not claim %s: %s", id, firstSentence(got.text))
		return nil
	}
	a.say("claimed %s", id)
	return nil
}

// act does what one get_next_action answer says: one case per action.
func (a *agent) act(ctx context.Context, r result) error {
	switch action := r.str("action"); action {
	case "exit", "logout":
		a.call(ctx, "logout", map[string]any{})
		a.say("logged out (%s)", action)
		return errDone
	case "wait_for_messages", "wait_for_task", "wait_for_delegation":
		return nil
	case "conversation_ended":
		conv := r.str("conversation_id")
		a.say("conversation %s ended (%s)", conv, r.str("reason"))
		a.ended[conv] = true
		if dlg := a.carries[conv]; dlg != "" {
			delete(a.carries, conv)
			// The last turn may still be unread: read it into the chain first.
			if err := a.readMessages(ctx); err != nil {
				return err
			}
			return a.reportChain(ctx, dlg, conv)
		}
		return nil
	case "process_delegation":
		d, _ := r.data["delegation"].(map[string]any)
		return a.processDelegation(ctx, d)
	case "conversation_request":
		a.say("accepted conversation %s from %s (%s)", r.str("conversation_id"), r.str("from_agent_id"), r.str("purpose"))
		a.rememberOrder(r.str("conversation_id"), r)
		return a.readMessages(ctx)
	case "claim_task":
		return a.claim(ctx, r)
	case "get_pending_messages":
		return a.readMessages(ctx)
	case "get_notifications":
		_, err := a.readNotifications(ctx, false)
		return err
	case "work":
		if decided, err := a.decideReport(ctx, r); decided || err != nil {
			return err
		}
		task, _ := r.data["task"].(map[string]any)
		dlgs, _ := r.data["delegations"].([]any)
		return a.work(ctx, task, dlgs)
	default:
		return fmt.Errorf("get_next_action said %q, which this simulated agent does not know", action)
	}
}

// The patterns of this file are compiled when first used: compiled at
// package init, every aipm process (aipm serve too) would pay for them.
var stepsRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`sim-steps=(\d+)`) })

// work does a task. A line "delegate: AGENT: PURPOSE" in its description
// asks for talk with AGENT: the first time, the task session delegates it
// to the chat session (get_next_action then waits while the delegation is
// open); once it is closed, the conversations are read and the task is
// reported done with the delegation's result. Otherwise sim-steps=N in the
// description is how many steps (a get_task each, Step apart; default 3);
// then it reports success.
func (a *agent) work(ctx context.Context, task map[string]any, dlgs []any) error {
	id, _ := task["id"].(string)
	title, _ := task["title"].(string)
	desc, _ := task["description"].(string)
	if m := delegateRE().FindStringSubmatch(desc); m != nil {
		return a.workByDelegation(ctx, id, strings.TrimSpace(m[1]), strings.TrimSpace(m[2]), dlgs)
	}
	steps := 3
	if m := stepsRE().FindStringSubmatch(desc); m != nil {
		steps, _ = strconv.Atoi(m[1])
	}
	a.say("working on %s %q (%d steps)", id, title, steps)
	for i := 0; i < steps; i++ {
		r, err := a.call(ctx, "get_task", map[string]any{"task_id": id})
		if err != nil {
			return err
		}
		if done, err := a.checkReports(ctx, r); done || err != nil {
			return err
		}
		if a.o.Between != nil && i < steps-1 {
			a.o.Between(ctx, id, i)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(a.o.Step):
		}
	}
	r, err := a.call(ctx, "report_completed", map[string]any{"result": "success", "summary": fmt.Sprintf("did %q in %d steps", title, steps)})
	if err != nil {
		return err
	}
	if r.isError {
		return fmt.Errorf("report_completed: %s", r.text)
	}
	a.say("reported %s done", id)
	return nil
}

// delegateRE is the convention a task description uses to ask for talk
// with another agent: a line "delegate: AGENT: PURPOSE".
var delegateRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\s*delegate:\s*([A-Za-z0-9][A-Za-z0-9_-]*)\s*:\s*(.+)$`)
})

func (a *agent) workByDelegation(ctx context.Context, task, target, purpose string, dlgs []any) error {
	if len(dlgs) == 0 {
		r, err := a.call(ctx, "delegate_to_chat_session", map[string]any{
			"target_agent_id": target, "purpose": purpose, "context": "for task " + task,
		})
		if err != nil {
			return err
		}
		if r.isError {
			return fmt.Errorf("delegate_to_chat_session: %s", r.text)
		}
		a.say("delegated %s to my chat session: %s with %s", r.str("delegation_id"), purpose, target)
		return nil // get_next_action waits while the delegation is open
	}
	r, err := a.call(ctx, "get_task", map[string]any{})
	if err != nil {
		return err
	}
	if r.isError {
		return fmt.Errorf("get_task: %s", r.text)
	}
	convs, _ := r.data["conversations"].([]any)
	status, summary := "success", ""
	for _, x := range dlgs {
		d, _ := x.(map[string]any)
		st, _ := d["status"].(string)
		res, _ := d["result"].(string)
		if st != "completed" {
			status = "failed"
		}
		summary += fmt.Sprintf("delegation %v %s: %s. ", d["id"], st, res)
	}
	a.say("delegation closed (%d conversation(s)); reporting %s", len(convs), status)
	r, err = a.call(ctx, "report_completed", map[string]any{"result": status, "summary": strings.TrimSpace(summary)})
	if err != nil {
		return err
	}
	if r.isError {
		return fmt.Errorf("report_completed: %s", r.text)
	}
	a.say("reported %s done", task)
	return nil
}

// processDelegation carries out a delegation in the chat session: a
// purpose that asks for the word game (shiritori, word chain) starts a conversation with the target
// (reported completed when it ends); anything else is one message to the
// target, reported completed at once.
func (a *agent) processDelegation(ctx context.Context, d map[string]any) error {
	id, _ := d["id"].(string)
	target, _ := d["target_agent_id"].(string)
	purpose, _ := d["purpose"].(string)
	dctx, _ := d["context"].(string)
	a.say("carrying out %s: %s (with %s)", id, purpose, target)
	if isWordGame(purpose) {
		conv, err := a.openShiritori(ctx, target, purpose, id)
		if err != nil {
			return err
		}
		if conv == "" {
			return a.reportDelegation(ctx, id, "failed", "could not start a conversation with "+target)
		}
		a.carries[conv] = id
		return nil
	}
	content := purpose
	if dctx != "" {
		content += " (" + dctx + ")"
	}
	r, err := a.send(ctx, "send_message", map[string]any{"target_agent_id": target, "content": content})
	if err != nil {
		return err
	}
	if r.isError {
		return a.reportDelegation(ctx, id, "failed", "could not message "+target+": "+firstSentence(r.text))
	}
	return a.reportDelegation(ctx, id, "completed", "told "+target+": "+content)
}

// reportChain reports a shiritori delegation completed with the chain of
// words its conversation played.
func (a *agent) reportChain(ctx context.Context, dlg, conv string) error {
	words := a.chain[conv]
	result := fmt.Sprintf("played %d words in %s: %s", len(words), conv, strings.Join(words, " → "))
	return a.reportDelegation(ctx, dlg, "completed", result)
}

func (a *agent) reportDelegation(ctx context.Context, id, status, result string) error {
	r, err := a.call(ctx, "report_delegation_completed", map[string]any{"delegation_id": id, "status": status, "result": result})
	if err != nil {
		return err
	}
	if r.isError {
		return fmt.Errorf("report_delegation_completed: %s", r.text)
	}
	a.say("reported %s %s: %s", id, status, result)
	return nil
}

var shiritoriRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(?:shiritori|word chain) with ([A-Za-z0-9][A-Za-z0-9_-]*)`)
})

// isWordGame says whether a request asks for the word game: "shiritori"
// (kana, or English when it says so) or "word chain" (English).
func isWordGame(request string) bool {
	r := strings.ToLower(request)
	return strings.Contains(r, "shiritori") || strings.Contains(r, "word chain")
}

// readMessages reads the unread messages and answers each: a turn of a
// conversation gets the next shiritori word (or the end of the
// conversation when there is none); a human asking for "shiritori with X"
// gets a conversation with X; anything else is acknowledged.
func (a *agent) readMessages(ctx context.Context) error {
	r, err := a.call(ctx, "get_pending_messages", map[string]any{})
	if err != nil {
		return err
	}
	if r.isError {
		return fmt.Errorf("get_pending_messages: %s", r.text)
	}
	msgs, _ := r.data["pending_messages"].([]any)
	for _, m := range msgs {
		msg, _ := m.(map[string]any)
		from, _ := msg["sender_id"].(string)
		content, _ := msg["content"].(string)
		conv, _ := msg["conversation_id"].(string)
		if kind, _ := msg["kind"].(string); kind == "system" {
			a.say("system says: %s", content)
			continue
		}
		switch {
		case conv != "" && !a.myTurnAfter(conv, from):
			a.heard(conv, content) // another party's turn to answer it
		case conv != "":
			err = a.playTurn(ctx, conv, from, content)
		case groupTargets(content) != nil:
			err = a.startGroupGame(ctx, from, content, groupTargets(content))
		case shiritoriRE().MatchString(content):
			err = a.startShiritori(ctx, from, content)
		default:
			a.say("%s asked: %q", from, content)
			_, err = a.send(ctx, "send_message", map[string]any{"target_agent_id": from, "content": "Received: " + content})
		}
		if err != nil {
			return err
		}
	}
	return a.obeyMarkers(ctx, r.str("instruction"))
}

func (a *agent) send(ctx context.Context, tool string, args map[string]any) (result, error) {
	r, err := a.call(ctx, tool, args)
	if err == nil && r.isError && !strings.HasPrefix(r.text, "conversation_not_active") && !strings.HasPrefix(r.text, "not_your_turn") {
		a.say("%s refused: %s", tool, r.text)
	}
	return r, err
}

func (a *agent) words(conv string) map[string]bool {
	if a.used[conv] == nil {
		a.used[conv] = map[string]bool{}
	}
	return a.used[conv]
}

func (a *agent) startShiritori(ctx context.Context, from, content string) error {
	target := shiritoriRE().FindStringSubmatch(content)[1]
	conv, err := a.openShiritori(ctx, target, content, "")
	if err != nil || conv == "" {
		return err
	}
	_, err = a.send(ctx, "send_message", map[string]any{"target_agent_id": from, "content": fmt.Sprintf("Playing with %s (%s).", target, conv)})
	return err
}

var (
	turnsRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(\d+) turns`) })
	roundsRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(\d+)[- ]rounds?`) })
	firstRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)start with (\S+?)[.,;]?(?:\s|$)`) })
)

// shiritoriPlan reads a request for shiritori or a word chain: "N turns"
// or "N-round" (two turns a round; default 8 turns), "start with WORD"
// (default しりとり, or apple when it says English or word chain).
func shiritoriPlan(request string) (turns int, first string) {
	turns = 8
	if m := turnsRE().FindStringSubmatch(request); m != nil {
		turns, _ = strconv.Atoi(m[1])
	} else if m := roundsRE().FindStringSubmatch(request); m != nil {
		n, _ := strconv.Atoi(m[1])
		turns = 2 * n
	}
	first = "しりとり"
	if r := strings.ToLower(request); strings.Contains(r, "english") || strings.Contains(r, "word chain") {
		first = "apple"
	}
	if m := firstRE().FindStringSubmatch(request); m != nil {
		first = m[1]
	}
	return turns, first
}

// openShiritori starts a shiritori conversation with target as the
// request says (shiritoriPlan), carrying out delegation if it is not "".
// It returns the conversation's id, or "" when it was refused.
func (a *agent) openShiritori(ctx context.Context, target, request, delegation string) (string, error) {
	turns, first := shiritoriPlan(request)
	game := "word chain"
	if isKana(first) {
		game = "shiritori"
	}
	args := map[string]any{"target_agent_id": target, "purpose": game, "initial_message": first, "max_turns": turns}
	if delegation != "" {
		args["delegation_id"] = delegation
	}
	r, err := a.send(ctx, "start_conversation", args)
	if err != nil || r.isError {
		return "", err
	}
	conv := r.str("conversation_id")
	a.words(conv)[first] = true
	a.chain[conv] = append(a.chain[conv], first)
	a.say("started %s %s with %s (%d turns): %s", game, conv, target, turns, first)
	return conv, nil
}

// heard records a word played in conv without answering it.
func (a *agent) heard(conv, word string) {
	word = strings.TrimSpace(word)
	a.words(conv)[word] = true
	a.chain[conv] = append(a.chain[conv], word)
}

func (a *agent) playTurn(ctx context.Context, conv, from, word string) error {
	used := a.words(conv)
	word = strings.TrimSpace(word)
	a.heard(conv, word)
	if a.ended[conv] {
		return nil // a last turn read after the end: nothing to answer
	}
	next := nextWord(word, used)
	if next == "" || !validMove(word, next) {
		a.say("%s said %s; I have no word for %q: I end %s", from, word, lastSound(word), conv)
		_, err := a.send(ctx, "end_conversation", map[string]any{"conversation_id": conv})
		return err
	}
	used[next] = true
	r, err := a.send(ctx, "send_conversation_message", map[string]any{"conversation_id": conv, "content": next})
	if err != nil || r.isError {
		return err
	}
	a.rememberOrder(conv, r)
	a.chain[conv] = append(a.chain[conv], next)
	a.say("%s → %s", word, next)
	return nil
}
