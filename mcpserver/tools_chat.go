package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// SendMessageIn is send_message's arguments: one receiver, several, or a group.
type SendMessageIn struct {
	Session
	TargetAgentID  string   `json:"target_agent_id,omitempty"`
	TargetAgentIDs []string `json:"target_agent_ids,omitempty"`
	TargetGroup    string   `json:"target_group,omitempty"`
	Content        string   `json:"content"`
	RelatedTaskID  string   `json:"related_task_id,omitempty"`
	ConversationID string   `json:"conversation_id,omitempty"`
	// AutoStartConversation: to an AI agent with no live chat session and
	// no open conversation with you, start one with this message as its
	// first turn.
	AutoStartConversation bool `json:"auto_start_conversation,omitempty" jsonschema:"if no chat session: start a conversation"`
}

// SentOut is seed 000's answer to send_message: success, message_id and
// target_agent_id.
type SentOut struct {
	Success       bool   `json:"success"`
	MessageID     string `json:"message_id"`
	TargetAgentID string `json:"target_agent_id"`
	CreatedAt     string `json:"created_at"`
	// Set when the message was a turn of a conversation (between two AI
	// agents with an open conversation).
	ConversationID string `json:"conversation_id,omitempty"`
	TurnsLeft      *int   `json:"turns_left,omitempty"`
	// ReceiverState and ReceiverNote say truthfully what will happen to
	// the message (fsstore.ReceiverStateOf): no silent success.
	ReceiverState string `json:"receiver_state,omitempty" jsonschema:"live (its chat session runs), starting (aipm watch is starting it) or queued (nobody will take it yet: see receiver_note)"`
	ReceiverNote  string `json:"receiver_note,omitempty"`
	Instruction   string `json:"instruction,omitempty"`
	// A message to several receivers (target_agent_ids, target_group):
	// what will happen to it for each.
	Receivers   []fsstore.ReceiverState `json:"receivers,omitempty"`
	TargetGroup string                  `json:"target_group,omitempty"`
	// AutoStart says what auto_start_conversation did.
	AutoStart string `json:"auto_start,omitempty"`
}

func sendMessageTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "send_message",
			Description: "Send a chat message. (chat)",
			Annotations: mutating,
		},
		level: ChatOnly,
		add:   addSendMessage,
	}
}

func addSendMessage(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in SendMessageIn) (*mcp.CallToolResult, SentOut, error) {
		m := fsstore.OutgoingMessage{
			From: sessionFrom(ctx).Agent, To: in.TargetAgentID, Receivers: in.TargetAgentIDs, Group: in.TargetGroup,
			Content: in.Content, RelatedTaskID: in.RelatedTaskID, ConversationID: in.ConversationID,
		}
		if in.AutoStartConversation {
			out, err := s.autoStart(ctx, m)
			return nil, out, err
		}
		out, err := s.send(ctx, m)
		return nil, out, err
	})
}

func (s *Server) send(ctx context.Context, m fsstore.OutgoingMessage) (SentOut, error) {
	cfg, err := s.config()
	if err != nil {
		return SentOut{}, err
	}
	msg, c, err := s.store.SendTurn(ctx, cfg, m)
	if err != nil {
		return SentOut{}, fromStore(err, "agent_not_found")
	}
	return s.sent(cfg, m, msg, c), nil
}

// sent is send_message's answer for a message sent (msg) and the
// conversation it is a turn of (c, or nil).
func (s *Server) sent(cfg *fsstore.Config, m fsstore.OutgoingMessage, msg fsstore.Message, c *fsstore.Conversation) SentOut {
	out := SentOut{Success: true, MessageID: msg.ID, TargetAgentID: m.To, CreatedAt: msg.CreatedAt}
	if c != nil {
		left := c.TurnsLeft()
		out.ConversationID, out.TurnsLeft, out.Instruction = c.ID, &left, turnNote(*c, m.From)
	}
	if msg.ReceiverIDs == nil {
		rs := s.store.ReceiverStateOf(cfg, m.To, time.Now())
		out.ReceiverState, out.ReceiverNote = rs.State, rs.Note
	} else {
		now := time.Now()
		out.TargetGroup = msg.TargetGroup
		for _, r := range msg.ReceiverIDs {
			out.Receivers = append(out.Receivers, s.store.ReceiverStateOf(cfg, r, now))
		}
		if c == nil {
			out.Instruction = fmt.Sprintf("Sent to %s; each answers you alone. Call get_next_action.", strings.Join(msg.ReceiverIDs, ", "))
		}
	}
	return out
}

// autoStart is send_message with auto_start_conversation
// (fsstore.Store.AutoStart): the answer says what happened.
func (s *Server) autoStart(ctx context.Context, m fsstore.OutgoingMessage) (SentOut, error) {
	cfg, err := s.config()
	if err != nil {
		return SentOut{}, err
	}
	msg, c, outcome, err := s.store.AutoStart(ctx, cfg, m)
	if err != nil {
		return SentOut{}, fromStore(err, "agent_not_found")
	}
	out := s.sent(cfg, m, msg, c)
	out.AutoStart = outcome
	switch outcome {
	case fsstore.AutoStarted:
		out.Instruction = fmt.Sprintf("Started conversation %s with %s; your message is its first turn, and %s gets it from its get_next_action. Call get_next_action to wait for the answer; answer with send_conversation_message, and call end_conversation when you are done.", c.ID, m.To, m.To)
	case fsstore.AutoExisting:
		out.Instruction = fmt.Sprintf("You and %s already have an open conversation: the message is a turn of it, no new one was started. %s", m.To, out.Instruction)
	case fsstore.AutoLiveSession:
		out.Instruction = fmt.Sprintf("%s's chat session is running: the message was sent as it is, and no conversation was started (use start_conversation for one). Call get_next_action.", m.To)
	}
	return out, nil
}

// GetPendingMessagesIn is get_pending_messages' arguments.
type GetPendingMessagesIn struct {
	Session
	Limit int `json:"limit,omitempty" jsonschema:"default 20, at most 100"`
	Acknowledgement
}

// PendingMessagesOut is get_pending_messages' result.
type PendingMessagesOut struct {
	PendingMessages    []MessageView    `json:"pending_messages" jsonschema:"unread messages, oldest first"`
	HasMore            bool             `json:"has_more" jsonschema:"more unread messages wait: call get_pending_messages again"`
	Context            []MessageView    `json:"context" jsonschema:"messages you had already seen, oldest first"`
	PendingDelegations []DelegationView `json:"pending_delegations" jsonschema:"open delegations from your task session: close each with report_delegation_completed"`
	Instruction        string           `json:"instruction"`
	// Ack, when messages were handed, is what the session's next read
	// passes to say it read them (links.go, rule 3).
	Ack string `json:"ack,omitempty" jsonschema:"pass it as ack on your next get_next_action or get_pending_messages: it says you read these"`
}

// contextMessages is how many already-seen messages come with new ones.
const contextMessages = 5

func getPendingMessagesTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "get_pending_messages",
			Description: "Your unread messages, oldest first, with context. (chat)",
			Annotations: mutating,
		},
		toldOfMessages: true,
		level:          ChatOnly,
		handsBatch:     true,
		takesAck:       true,
		readsStream:    fsstore.StreamChat,
		page:           pendingMessagePage,
		add:            addGetPendingMessages,
	}
}

func addGetPendingMessages(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in GetPendingMessagesIn) (*mcp.CallToolResult, PendingMessagesOut, error) {
		ses := sessionFrom(ctx)
		limit, err := pendingMessagePage.of(in.Limit)
		if err != nil {
			return nil, PendingMessagesOut{}, err
		}
		seen, err := s.store.Recent(ses.Agent, ses.ID, contextMessages)
		if err != nil {
			return nil, PendingMessagesOut{}, fromStore(err, "agent_not_found")
		}
		msgs, more, err := s.store.Deliver(ctx, ses, limit)
		if err != nil {
			return nil, PendingMessagesOut{}, fromStore(err, "agent_not_found")
		}
		dlgs, err := s.store.Delegations().List(fsstore.DelegationFilter{Agent: ses.Agent, Open: true})
		if err != nil {
			return nil, PendingMessagesOut{}, fromStore(err, "delegation_not_found")
		}
		out := PendingMessagesOut{PendingMessages: messageViews(msgs), HasMore: more, Context: messageViews(seen), PendingDelegations: delegationViews(dlgs)}
		if len(msgs) > 0 {
			out.Ack = ackFrom(ctx)
		}
		next := withAckArg("get_next_action", out.Ack)
		replyTo := ""
		for _, m := range msgs {
			if m.Kind != fsstore.KindSystem {
				replyTo = m.SenderID
			}
		}
		switch {
		case replyTo != "":
			// The batch is handed out: respond_chat answers its last sender.
			if err := s.store.SetReplyTo(ctx, ses.ID, replyTo); err != nil {
				s.log.Error("record whom respond_chat answers", "session", ses.ID, "err", err)
			}
			out.Instruction = fmt.Sprintf("Read them. Answer %s with respond_chat(content), or anyone with send_message; then call %s.", replyTo, next)
		case len(msgs) > 0:
			out.Instruction = "These are system messages. Act on them if needed, then call " + next + "."
		default:
			out.Instruction = "No unread messages. Call get_next_action."
		}
		if more {
			out.Instruction = "More unread messages wait: call " + withAckArg("get_pending_messages", out.Ack) + " again after these. " + out.Instruction
		}
		if len(dlgs) > 0 {
			out.Instruction += fmt.Sprintf(" You also have %d open delegation(s) from your task session (pending_delegations): carry each out and close it with report_delegation_completed.", len(dlgs))
		}
		if carriesMarker(msgs) {
			out.Instruction += " " + markerInstruction(msgs)
		}
		out.Instruction += s.groupTurns(ctx, ses.Agent, msgs)
		return nil, out, nil
	})
}

// groupTurns says, for each group conversation the messages are turns of,
// whose turn it is now ("" when none is).
func (s *Server) groupTurns(ctx context.Context, agent string, msgs []fsstore.Message) string {
	cfg, err := s.config()
	if err != nil {
		return ""
	}
	var b strings.Builder
	seen := map[string]bool{}
	for _, m := range msgs {
		if m.ConversationID == "" || m.ReceiverIDs == nil || seen[m.ConversationID] {
			continue
		}
		seen[m.ConversationID] = true
		c, err := s.store.Conversations().Get(ctx, cfg, agent, m.ConversationID)
		if err != nil || !c.IsGroup() || !c.Open() {
			continue
		}
		who := c.NextSpeaker()
		if who == agent {
			who = "your"
		} else {
			who += "'s"
		}
		fmt.Fprintf(&b, " Group conversation %s: it is %s turn (order: %s); a turn is send_conversation_message(conversation_id=%q, content), not respond_chat.", c.ID, who, strings.Join(c.Parties(), ", "), c.ID)
	}
	return b.String()
}

// RespondChatIn is respond_chat's arguments.
type RespondChatIn struct {
	Session
	Content string `json:"content"`
}

func respondChatTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "respond_chat",
			Description: "Answer the last message you read. (chat)",
			Annotations: mutating,
		},
		level: ChatOnly,
		add:   addRespondChat,
	}
}

func addRespondChat(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in RespondChatIn) (*mcp.CallToolResult, SentOut, error) {
		ses := sessionFrom(ctx)
		if ses.ReplyTo == "" {
			return nil, SentOut{}, toolErr("no_message_to_respond", "this session has not received a message yet: call get_pending_messages first, or use send_message with target_agent_id")
		}
		out, err := s.send(ctx, fsstore.OutgoingMessage{From: ses.Agent, To: ses.ReplyTo, Content: in.Content})
		return nil, out, err
	})
}

// MarkReadIn is mark_read's arguments.
type MarkReadIn struct {
	Session
	MessageIDs []string `json:"message_ids" jsonschema:"at most 100"`
}

// MarkReadOut is mark_read's result.
type MarkReadOut struct {
	Read []fsstore.MarkedRead `json:"read" jsonschema:"each message and when it was read"`
}

func markReadTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "mark_read",
			Description: "Mark messages read now. (chat)",
			Annotations: mutating,
		},
		level: ChatOnly,
		add:   addMarkRead,
	}
}

func addMarkRead(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in MarkReadIn) (*mcp.CallToolResult, MarkReadOut, error) {
		read, err := s.store.MarkRead(ctx, sessionFrom(ctx), in.MessageIDs)
		if err != nil {
			return nil, MarkReadOut{}, fromStore(err, "message_not_found")
		}
		return nil, MarkReadOut{Read: read}, nil
	})
}
