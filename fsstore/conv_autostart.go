package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"errors"
	"time"
)

// What send_message(auto_start_conversation: true) did (AutoStart).
const (
	// AutoStarted: a conversation was started with the message as its
	// first turn; the receiver gets conversation_request (the watcher
	// starts it).
	AutoStarted = "started"
	// AutoExisting: an open conversation already joins the two: the
	// message is a turn of it.
	AutoExisting = "existing_conversation"
	// AutoLiveSession: the receiver's chat session runs: the message is
	// sent as it is, outside any conversation.
	AutoLiveSession = "live_session"
)

// AutoStart is send_message with auto_start_conversation (seed 001
// "自動会話開始"): to one AI agent with no live chat session and no open
// conversation with the sender, it starts a conversation exactly as
// start_conversation with initial_message would (the same checks and
// uniqueness rule), the message being its first turn. When the two already
// have an open conversation the message is a turn of it; when the receiver
// has a live chat session it is sent as it is: neither is an error, and the
// outcome says which happened. A group send, a human receiver or a sender
// that is not an AI agent is refused (auto_start_refused).
func (s *Store) AutoStart(ctx context.Context, cfg *storage.Config, m OutgoingMessage) (Message, *Conversation, string, error) {
	if m.Group != "" || m.Receivers != nil {
		return Message{}, nil, "", storage.CodeErr(storage.CodeAutoStartRefused, "auto_start_conversation is for a message to one AI agent (target_agent_id), not a list or a group: leave it out, or start a group conversation with start_conversation(participant_agent_ids)")
	}
	if err := checkContent(m.Content); err != nil {
		return Message{}, nil, "", err
	}
	if err := s.checkRecipient(cfg, m.From, m.To); err != nil {
		return Message{}, nil, "", err
	}
	to, _ := cfg.Agent(m.To)
	if me, _ := cfg.Agent(m.From); to.Type != storage.AgentAI || me.Type != storage.AgentAI {
		return Message{}, nil, "", storage.CodeErr(storage.CodeAutoStartRefused, "auto_start_conversation starts a conversation between two AI agents, and %s is a human: send the message without it", firstHuman(cfg, m.From, m.To))
	}
	outcome := AutoExisting
	if m.ConversationID == "" {
		_, err := s.openConversation(ctx, cfg, m.From, m.To)
		var ce *storage.CodeError
		switch {
		case errors.As(err, &ce) && ce.Code == storage.CodeNoActiveConversation:
			outcome = AutoStarted
		case err != nil:
			return Message{}, nil, "", err
		}
	}
	if outcome == AutoStarted && s.ReceiverStateOf(cfg, m.To, time.Now()).State == ReceiverLive {
		outcome = AutoLiveSession
	}
	if outcome == AutoStarted {
		c, msg, err := s.Conversations().Start(ctx, cfg, NewConversation{From: m.From, To: m.To, InitialMessage: m.Content, TaskID: m.RelatedTaskID})
		var ce *storage.CodeError
		if errors.As(err, &ce) && ce.Code == storage.CodeConversationAlreadyActive {
			outcome = AutoExisting // another process started one between the look and the start
		} else if err != nil || msg == nil {
			return Message{}, nil, "", err
		} else {
			return *msg, &c, outcome, nil
		}
	}
	msg, c, err := s.SendTurn(ctx, cfg, m)
	return msg, c, outcome, err
}

func firstHuman(cfg *storage.Config, ids ...string) string {
	for _, id := range ids {
		if a, _ := cfg.Agent(id); a.Type != storage.AgentAI {
			return id
		}
	}
	return ""
}
