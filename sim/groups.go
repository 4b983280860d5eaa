package sim

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Group conversations and broadcasts (issue 25). A request "word chain
// with X and Y" (or "X, Y and Z") starts a group conversation with X and Y in
// that turn order; in a group conversation the simulated agent plays only
// when the turn that arrived is its predecessor's (the parties' order comes
// with conversation_request and start_conversation's answers). A broadcast
// (a message to several) is answered to its sender alone, like any message.

var groupGameRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(?:shiritori|word chain) with ([A-Za-z0-9][A-Za-z0-9_-]*(?:\s*,\s*[A-Za-z0-9][A-Za-z0-9_-]*)*\s+and\s+[A-Za-z0-9][A-Za-z0-9_-]*)`)
})

// groupTargets are the agents a request for a group game names, or nil.
func groupTargets(request string) []string {
	m := groupGameRE().FindStringSubmatch(request)
	if m == nil {
		return nil
	}
	return strings.FieldsFunc(strings.ReplaceAll(m[1], " and ", ","), func(r rune) bool { return r == ',' || r == ' ' })
}

// rememberOrder keeps the turn order of a group conversation from an
// answer that carries it (parties).
func (a *agent) rememberOrder(conv string, r result) {
	raw, _ := r.data["parties"].([]any)
	if conv == "" || len(raw) == 0 {
		return
	}
	order := make([]string, 0, len(raw))
	for _, p := range raw {
		s, _ := p.(string)
		order = append(order, s)
	}
	a.order[conv] = order
}

// myTurnAfter says whether a turn by from in conv is the one this agent
// answers: in a group conversation whose order it knows, only when from is
// the party just before it; otherwise always (a two-party conversation, or
// an order it was never told: the server refuses a turn out of order).
func (a *agent) myTurnAfter(conv, from string) bool {
	order := a.order[conv]
	me := slices.Index(order, a.o.Agent)
	if me < 0 {
		return true
	}
	return order[(me+len(order)-1)%len(order)] == from
}

// startGroupGame starts a group word game with targets, as asked by from.
func (a *agent) startGroupGame(ctx context.Context, from, content string, targets []string) error {
	turns, first := shiritoriPlan(content)
	game := "word chain"
	if isKana(first) {
		game = "shiritori"
	}
	r, err := a.send(ctx, "start_conversation", map[string]any{"participant_agent_ids": targets, "purpose": game, "initial_message": first, "max_turns": turns})
	if err != nil || r.isError {
		return err
	}
	conv := r.str("conversation_id")
	a.rememberOrder(conv, r)
	a.words(conv)[first] = true
	a.chain[conv] = append(a.chain[conv], first)
	a.say("started group %s %s with %s (%d turns): %s", game, conv, strings.Join(targets, ", "), turns, first)
	_, err = a.send(ctx, "send_message", map[string]any{"target_agent_id": from, "content": fmt.Sprintf("Playing with %s (%s).", strings.Join(targets, ", "), conv)})
	return err
}
