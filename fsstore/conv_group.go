package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"slices"
	"strings"
	"time"
)

// Group conversations (docs/concepts.md): the initiator and two or more
// participants take turns in a fixed order (initiator, then participants
// as given, round-robin); each turn is one group message to every other
// party. It becomes active when the first participant takes the request
// (each participant still gets its own conversation_request); any party
// ending it, its timeout, or a party's chat session ending ends it for all,
// and every party is told once.

// checkGroupParties checks start_conversation's participant_agent_ids:
// two or more AI agents, not the caller, none twice, at most MaxReceivers.
func (s *Store) checkGroupParties(cfg *storage.Config, from string, participants []string) error {
	if len(participants) < 2 {
		return storage.CodeErr(storage.CodeAgentNotFound, "participant_agent_ids names %d agent(s): a group conversation needs two or more others; for one, use target_agent_id", len(participants))
	}
	if len(participants) > storage.MaxReceivers {
		return storage.CodeErr(storage.CodeTooManyReceivers, "%d participants is too many: at most %d", len(participants), storage.MaxReceivers)
	}
	seen := map[string]bool{}
	for _, p := range participants {
		if err := s.checkConversationParties(cfg, from, p); err != nil {
			return err
		}
		if seen[p] {
			return storage.CodeErr(storage.CodeDuplicateReceiver, "participant_agent_ids names %s twice: name each participant once", p)
		}
		seen[p] = true
	}
	return nil
}

// groupTurn checks from's turn in group conversation id, whose other
// parties must be exactly receivers, writes it (write, given the party
// whose turn it makes it, whose copy it writes first: turnOrder) and counts
// it, all under the conversations' lock: the conversation must be open and
// it must be from's turn (else not_your_turn, naming whose it is). The turn
// counts only once written (Conversation.turn, the rule for conversations
// of two too): at least that next party's copy, so the party that holds
// the turn has the message it answers. A copy of another receiver that
// could not be written (sent_partly) comes with doctor --repair.
func (s *Store) groupTurn(ctx context.Context, cfg *storage.Config, from, id string, receivers []string, write func(next string) error) error {
	if _, err := s.partyConversation(ctx, cfg, from, id); err != nil {
		return err
	}
	var written error // a sent_partly, returned once the turn is counted
	_, err := s.updateConversation(ctx, cfg, id, func(c *Conversation, now time.Time) error {
		others := c.Others(from)
		if !c.IsGroup() || !sameSet(others, receivers) {
			return storage.CodeErr(storage.CodeNotConversationParticipant, "conversation %s is among %s: a turn goes to %s; send it with send_conversation_message", c.ID, strings.Join(c.Parties(), ", "), strings.Join(others, ", "))
		}
		if !c.Open() {
			return storage.CodeErr(storage.CodeConversationNotActive, "conversation %s is %s (%s): it takes no more turns; start a new one with start_conversation if you need to", c.ID, c.State, c.EndReason)
		}
		if next := c.NextSpeaker(); next != from {
			return storage.CodeErr(storage.CodeNotYourTurn, "it is %s's turn in conversation %s (order: %s; turn %d of %d): wait for %s's message (get_next_action brings it), then send yours", next, c.ID, strings.Join(c.Parties(), ", "), c.Turns+1, c.MaxTurns, next)
		}
		p := c.Parties()
		next := p[(c.Turns+1)%len(p)]
		var err error
		written, err = c.turn(from, now, func() error { return write(next) })
		return err
	})
	if err == nil {
		err = written
	}
	return err
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// Get returns conversation id, with a due timeout applied, for one of its
// parties (not_conversation_participant for anyone else).
func (cb ConversationBook) Get(ctx context.Context, cfg *storage.Config, agent, id string) (Conversation, error) {
	return cb.s.partyConversation(ctx, cfg, agent, id)
}
