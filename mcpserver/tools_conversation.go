package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// ConversationOut describes a conversation after a call changed or read it.
type ConversationOut struct {
	Success        bool   `json:"success"`
	ConversationID string `json:"conversation_id"`
	Status         string `json:"status" jsonschema:"pending, active, terminating, ended or expired"`
	TargetAgentID  string `json:"target_agent_id" jsonschema:"the other party"`
	Turns          int    `json:"turns" jsonschema:"messages exchanged so far"`
	MaxTurns       int    `json:"max_turns"`
	TurnsLeft      int    `json:"turns_left"`
	Reason         string `json:"reason,omitempty" jsonschema:"why it ended, once it has"`
	MessageID      string `json:"message_id,omitempty" jsonschema:"the message this call sent"`
	// A group conversation: every party in turn order, and whose turn it is.
	Parties     []string `json:"parties,omitempty"`
	NextTurn    string   `json:"next_turn,omitempty"`
	Instruction string   `json:"instruction"`
}

func conversationOut(c fsstore.Conversation, me string) ConversationOut {
	out := ConversationOut{
		Success: true, ConversationID: c.ID, Status: c.State, TargetAgentID: c.Other(me),
		Turns: c.Turns, MaxTurns: c.MaxTurns, TurnsLeft: c.TurnsLeft(), Reason: c.EndReason,
	}
	if c.IsGroup() {
		out.Parties = c.Parties()
		if c.Open() {
			out.NextTurn = c.NextSpeaker()
		}
	}
	return out
}

// turnNote is the one place that tells an agent where a conversation stands
// after its turn: the turn that reached max_turns, and a reminder to end
// the conversation as the limit nears.
func turnNote(c fsstore.Conversation, me string) string {
	switch {
	case !c.Open() && c.EndReason == fsstore.ReasonMaxTurns:
		return fmt.Sprintf("That was the last turn: conversation %s reached max_turns (%d) and is ending; you and %s will each get conversation_ended from get_next_action. Call get_next_action.", c.ID, c.MaxTurns, c.Other(me))
	case !c.Open():
		return fmt.Sprintf("Conversation %s is %s (%s). Call get_next_action.", c.ID, c.State, c.EndReason)
	case c.TurnsLeft() <= max(2, c.MaxTurns/5):
		return fmt.Sprintf("Only %d of %d turns left in conversation %s: wrap up, and call end_conversation when you are done. Then call get_next_action.", c.TurnsLeft(), c.MaxTurns, c.ID)
	case c.IsGroup():
		return fmt.Sprintf("It is %s's turn in conversation %s (order: %s). Call get_next_action to wait for the next turns.", c.NextSpeaker(), c.ID, strings.Join(c.Parties(), ", "))
	}
	return "Call get_next_action to wait for the answer."
}

// StartConversationIn is start_conversation's arguments.
type StartConversationIn struct {
	Session
	TargetAgentID string `json:"target_agent_id,omitempty"`
	// ParticipantAgentIDs start a group conversation instead.
	ParticipantAgentIDs []string `json:"participant_agent_ids,omitempty" jsonschema:"turns in this order"`
	Purpose             string   `json:"purpose,omitempty" jsonschema:"shown to them"`
	InitialMessage      string   `json:"initial_message,omitempty"`
	MaxTurns            int      `json:"max_turns,omitempty" jsonschema:"2 to 40 (default 20), all turns"`
	DelegationID        string   `json:"delegation_id,omitempty" jsonschema:"default: your open one to them"`
}

func startConversationTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "start_conversation",
			Description: "Start a turn-based conversation. (chat)",
			Annotations: mutating,
		},
		level: ChatOnly,
		add:   addStartConversation,
	}
}

func addStartConversation(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in StartConversationIn) (*mcp.CallToolResult, ConversationOut, error) {
		ses := sessionFrom(ctx)
		cfg, err := s.config()
		if err != nil {
			return nil, ConversationOut{}, err
		}
		c, msg, err := s.store.Conversations().Start(ctx, cfg, fsstore.NewConversation{
			From: ses.Agent, To: in.TargetAgentID, Participants: in.ParticipantAgentIDs, Purpose: in.Purpose, InitialMessage: in.InitialMessage, MaxTurns: in.MaxTurns,
			DelegationID: in.DelegationID,
		})
		if err != nil {
			return nil, ConversationOut{}, fromStore(err, "conversation_not_found")
		}
		out := conversationOut(c, ses.Agent)
		out.Instruction = fmt.Sprintf("Conversation %s requested; %s will get it from its get_next_action. Call get_next_action to wait for the answer; answer with send_conversation_message(content), and call end_conversation when you are done.", c.ID, c.Other(ses.Agent))
		if msg != nil {
			out.MessageID = msg.ID
		} else {
			out.Instruction = fmt.Sprintf("Conversation %s requested. Send the first message with send_conversation_message(content), then call get_next_action to wait for the answer; call end_conversation when you are done.", c.ID)
		}
		if c.IsGroup() {
			out.Instruction += fmt.Sprintf(" Turns go in this order: %s; each turn reaches every party.", strings.Join(c.Parties(), ", "))
		}
		return nil, out, nil
	})
}

// ConversationIDIn is the arguments of a tool that names one conversation (end_conversation).
type ConversationIDIn struct {
	Session
	ConversationID string `json:"conversation_id,omitempty"`
}

func endConversationTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "end_conversation",
			Description: "End a conversation. (chat)",
			Annotations: mutating,
		},
		level: ChatOnly,
		add:   addEndConversation,
	}
}

func addEndConversation(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in ConversationIDIn) (*mcp.CallToolResult, ConversationOut, error) {
		ses := sessionFrom(ctx)
		cfg, err := s.config()
		if err != nil {
			return nil, ConversationOut{}, err
		}
		c, err := s.store.Conversations().End(ctx, cfg, ses.Agent, in.ConversationID)
		if err != nil {
			return nil, ConversationOut{}, fromStore(err, "conversation_not_found")
		}
		out := conversationOut(c, ses.Agent)
		out.Instruction = fmt.Sprintf("Conversation %s is %s (%s); %s will be told. Call get_next_action.", c.ID, c.State, c.EndReason, c.Other(ses.Agent))
		return nil, out, nil
	})
}

// SendConversationMessageIn is send_conversation_message's arguments.
type SendConversationMessageIn struct {
	Session
	ConversationID string `json:"conversation_id,omitempty"`
	Content        string `json:"content"`
}

// sendConversationMessageTool and respondConversationMessageTool are one
// tool under two names: a turn in a conversation, whoever started it.
func sendConversationMessageTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "send_conversation_message",
			Description: "Send your conversation turn; at max_turns it ends. (chat)",
			Annotations: mutating,
		},
		level: ChatOnly,
		add:   addSendTurn,
	}
}

func respondConversationMessageTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "respond_conversation_message",
			Description: "Same as send_conversation_message. (chat)",
			Annotations: mutating,
		},
		level: ChatOnly,
		add:   addSendTurn,
	}
}

func addSendTurn(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in SendConversationMessageIn) (*mcp.CallToolResult, ConversationOut, error) {
		out, err := s.sendTurn(ctx, in)
		return nil, out, err
	})
}

// sendTurn sends the caller's turn in a conversation.
func (s *Server) sendTurn(ctx context.Context, in SendConversationMessageIn) (ConversationOut, error) {
	ses := sessionFrom(ctx)
	cfg, err := s.config()
	if err != nil {
		return ConversationOut{}, err
	}
	msg, c, err := s.store.Conversations().Send(ctx, cfg, ses.Agent, in.ConversationID, in.Content)
	if err != nil {
		return ConversationOut{}, fromStore(err, "conversation_not_found")
	}
	out := conversationOut(c, ses.Agent)
	out.MessageID, out.Instruction = msg.ID, turnNote(c, ses.Agent)
	return out, nil
}

// GetConversationMessagesIn is get_conversation_messages' arguments.
type GetConversationMessagesIn struct {
	Session
	ConversationID string `json:"conversation_id,omitempty"`
	Limit          int    `json:"limit,omitempty" jsonschema:"default 50, at most 200"`
}

// ConversationMessagesOut is one conversation and its messages, or, asked
// without conversation_id, the caller's conversations.
type ConversationMessagesOut struct {
	ConversationID string        `json:"conversation_id,omitempty"`
	Status         string        `json:"status,omitempty"`
	Initiator      string        `json:"initiator_id,omitempty"`
	Participant    string        `json:"participant_id,omitempty"`
	Participants   []string      `json:"participant_ids,omitempty"`
	Purpose        string        `json:"purpose,omitempty"`
	Turns          int           `json:"turns,omitempty"`
	MaxTurns       int           `json:"max_turns,omitempty"`
	Reason         string        `json:"reason,omitempty"`
	Previous       string        `json:"previous_conversation_id,omitempty" jsonschema:"the last conversation among the same agents before this one"`
	Messages       []MessageView `json:"messages,omitzero" jsonschema:"the conversation's messages, oldest first"`
	// Conversations: asked without conversation_id, the caller's
	// conversations, newest first.
	Conversations []ConversationView `json:"conversations,omitzero" jsonschema:"without conversation_id: yours, newest first"`
	HasMore       bool               `json:"has_more" jsonschema:"more were left out; raise limit"`
}

func getConversationMessagesTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "get_conversation_messages",
			Description: "A conversation you were in, with messages; no id: all yours.",
			Annotations: readOnly,
		},
		level: Authenticated,
		page:  conversationMessagePage,
		add:   addGetConversationMessages,
	}
}

func addGetConversationMessages(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in GetConversationMessagesIn) (*mcp.CallToolResult, ConversationMessagesOut, error) {
		ses := sessionFrom(ctx)
		limit, err := conversationMessagePage.of(in.Limit)
		if err != nil {
			return nil, ConversationMessagesOut{}, err
		}
		cfg, err := s.config()
		if err != nil {
			return nil, ConversationMessagesOut{}, err
		}
		if in.ConversationID == "" {
			cs, more, err := s.store.Conversations().Of(ctx, cfg, ses.Agent, limit)
			if err != nil {
				return nil, ConversationMessagesOut{}, fromStore(err, "conversation_not_found")
			}
			return nil, ConversationMessagesOut{Conversations: nonNil(conversationViews(cs)), HasMore: more}, nil
		}
		c, msgs, more, err := s.store.Conversations().Messages(ctx, cfg, ses.Agent, in.ConversationID, limit)
		if err != nil {
			return nil, ConversationMessagesOut{}, fromStore(err, "conversation_not_found")
		}
		var previous string
		if c.Previous != nil {
			previous = c.Previous.ID
		}
		return nil, ConversationMessagesOut{
			ConversationID: c.ID, Status: c.State, Initiator: c.Initiator, Participant: c.Participant, Participants: c.Participants, Purpose: c.Purpose,
			Turns: c.Turns, MaxTurns: c.MaxTurns, Reason: c.EndReason, Previous: previous, Messages: nonNil(messageViews(msgs)), HasMore: more,
		}, nil
	})
}
