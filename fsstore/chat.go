package fsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"aipm/fsstore/internal/storage"
	"aipm/internal/lockedfile"
)

// KindSystem marks a message aipm itself wrote.
const KindSystem = "system"

// Message is one chat line (DESIGN section 3, seed 000). The receiver's copy
// has no receiverId (its own file says who received it); the sender's copy
// has it.
type Message struct {
	ID         string `json:"id"`
	SenderID   string `json:"senderId"`
	ReceiverID string `json:"receiverId,omitempty"`
	// ReceiverIDs and TargetGroup are set on every copy of a group message
	// (chat_group.go): all its receivers, in order, and the config group it
	// was sent to, if any. Such a line never has receiverId; the sender's
	// copy is the one in the sender's own chat log.
	ReceiverIDs    []string `json:"receiverIds,omitempty"`
	TargetGroup    string   `json:"targetGroup,omitempty"`
	Content        string   `json:"content"`
	CreatedAt      string   `json:"createdAt"`
	ConversationID string   `json:"conversationId,omitempty"`
	RelatedTaskID  string   `json:"relatedTaskId,omitempty"`
	Kind           string   `json:"kind,omitempty"`
	// Redelivered is set on delivery, never stored: the message may have
	// reached a client before (a session that ended before acknowledging
	// it, or a chat log edited under the reader).
	Redelivered bool `json:"redelivered,omitempty"`
}

// timeFormat is RFC 3339 in UTC with a fixed microsecond fraction.
const timeFormat = "2006-01-02T15:04:05.000000Z07:00"

// decodeMessage is the one definition of a valid chat line (DESIGN section
// 3): a JSON object with a msg_ id, a sender that is an agent id or
// system, and an RFC 3339 createdAt. Readers skip what it refuses; doctor
// reports it as path:line: reason.
func decodeMessage(line []byte) (Message, error) {
	var m Message
	if err := json.Unmarshal(line, &m); err != nil {
		return m, fmt.Errorf("not a chat message: %s", lockedfile.JSONWords(line, err))
	}
	switch {
	case m.ID == "" || m.SenderID == "":
		return m, errors.New("not a chat message: id and senderId are required")
	case !strings.HasPrefix(m.ID, storage.PrefixMessage):
		return m, fmt.Errorf("not a chat message: id %q does not start with %s", storage.Clip(m.ID, storage.MaxEchoedID), storage.PrefixMessage)
	case m.SenderID != storage.SystemSender && storage.CheckAgentID(m.SenderID) != nil:
		return m, fmt.Errorf("not a chat message: senderId %q is not an agent id", storage.Clip(m.SenderID, storage.MaxEchoedID))
	}
	if _, err := time.Parse(time.RFC3339Nano, m.CreatedAt); err != nil {
		return m, fmt.Errorf("not a chat message: createdAt %q is not an RFC 3339 time", storage.Clip(m.CreatedAt, storage.MaxEchoedID))
	}
	if m.ReceiverIDs != nil {
		if m.ReceiverID != "" {
			return m, errors.New("not a chat message: a line has receiverId or receiverIds, not both")
		}
		for _, r := range m.ReceiverIDs {
			if storage.CheckAgentID(r) != nil || r == m.SenderID {
				return m, fmt.Errorf("not a chat message: receiverIds holds %q, which is not an agent id other than the sender", storage.Clip(r, storage.MaxEchoedID))
			}
		}
	}
	return m, nil
}

// fromOthers matches chat lines that someone else sent to agent. A line
// that is JSON but not a message (a hand edit gone wrong) does not match, so
// readers pass over it instead of failing on it; doctor reports it.
func fromOthers(agent string) func(storage.Record) bool {
	return func(r storage.Record) bool {
		// The agent's own sent copies, the bulk of a busy sender's log, are
		// passed over without decoding the whole line.
		f := gjson.GetManyBytes(r.Data, "senderId", "receiverId")
		if f[0].Type == gjson.String && f[0].Str == agent || f[1].Type == gjson.String && f[1].Str != "" {
			return false
		}
		m, err := decodeMessage(r.Data)
		return err == nil && m.ReceivedBy(agent)
	}
}

// OutgoingMessage is what a sender asks to send: to one receiver (To), or
// to several (Receivers, or the config group Group): exactly one of the
// three (CheckTargets).
type OutgoingMessage struct {
	From, To, Content, RelatedTaskID, ConversationID, Kind string
	Receivers                                              []string
	Group                                                  string
}

// checkContent is the one check of a message's text.
func checkContent(content string) error {
	if strings.TrimSpace(content) == "" {
		return storage.CodeErr(storage.CodeContentEmpty, "content is empty: write the message text")
	}
	return storage.CheckText("content", content)
}

// checkRecipient checks that `to` may receive a message from `from`.
func (s *Store) checkRecipient(cfg *storage.Config, from, to string) error {
	if to == from {
		return storage.CodeErr(storage.CodeCannotMessageSelf, "you cannot send a message to yourself (%s): choose another agent", from)
	}
	if err := storage.CheckAgentID(to); err != nil {
		return storage.CodeErr(storage.CodeAgentNotFound, "%v", err)
	}
	if _, ok := cfg.Agent(to); ok {
		return nil
	}
	if dir, _ := s.files.AgentDir(to); dirExists(dir) {
		return storage.CodeErr(storage.CodeTargetAgentNotInProject, "agent %q is no longer configured in this project: see aipm agent list for who you can message", to)
	}
	return storage.CodeErr(storage.CodeAgentNotFound, "there is no agent %q in this project: see aipm agent list (or list_tasks' assignees) for valid ids", to)
}

func dirExists(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir()
}

// SendTurn is Send, also returning the conversation the message is a turn
// of (nil if none), as it stands just after.
func (s *Store) SendTurn(ctx context.Context, cfg *storage.Config, m OutgoingMessage) (Message, *Conversation, error) {
	msg, err := s.Send(ctx, cfg, m)
	if err != nil || msg.ConversationID == "" {
		return msg, nil, err
	}
	c, err := s.conversation(ctx, cfg, msg.ConversationID)
	if err != nil {
		return msg, nil, nil // sent; only the report of the turn is missing
	}
	return msg, &c, nil
}

// Send checks and writes a message with the dual write of DESIGN section 4
// rule 4: the receiver's copy first, then the sender's, each under its own
// file lock, never both at once. Success means both lines are on disk. A
// message to several receivers (m.Receivers or m.Group) is sendGroup's.
func (s *Store) Send(ctx context.Context, cfg *storage.Config, m OutgoingMessage) (Message, error) {
	if err := checkContent(m.Content); err != nil {
		return Message{}, err
	}
	if m.From != storage.SystemSender {
		if _, ok := cfg.Agent(m.From); !ok {
			return Message{}, storage.CodeErr(storage.CodeAgentNotFound, "sender %q is not an agent of this project", m.From)
		}
	}
	if err := checkTargets(m.To, m.Receivers, m.Group); err != nil {
		return Message{}, err
	}
	if m.To == "" {
		return s.sendGroup(ctx, cfg, m)
	}
	if err := s.checkRecipient(cfg, m.From, m.To); err != nil {
		return Message{}, err
	}
	if err := s.checkRelatedTask(m.RelatedTaskID); err != nil {
		return Message{}, err
	}
	cnv, err := s.conversationForTurn(ctx, cfg, m)
	if err != nil {
		return Message{}, err
	}
	msg := Message{
		ID: storage.NewID(storage.PrefixMessage), SenderID: m.From, Content: m.Content,
		CreatedAt: time.Now().UTC().Format(timeFormat), ConversationID: cnv,
		RelatedTaskID: m.RelatedTaskID, Kind: m.Kind,
	}
	inbox, _ := s.files.ChatPath(m.To)
	if m.From == storage.SystemSender {
		return msg, s.files.AppendJSONL(ctx, inbox, msg) // the system keeps no outbox
	}
	sent := msg
	sent.ReceiverID = m.To
	write := func() error { return s.writeBoth(ctx, m, msg, sent) }
	if cnv != "" {
		err = s.twoPartyTurn(ctx, cfg, m, cnv, write) // written and counted under the conversations' lock
	} else {
		err = write()
	}
	var ce *storage.CodeError
	switch {
	case errors.As(err, &ce) && ce.Code == storage.CodeSentPartly:
		return msg, err
	case err != nil:
		return Message{}, err
	}
	return sent, nil
}

// writeBoth is the dual write of m: msg to the receiver's log, sent to the
// sender's. Both copies are written, then both flushed, the two fsyncs at
// once (flushBoth), so the receiver's copy is not waiting on an fsync
// before the sender's is written, nor the sender's fsync on the
// receiver's. Success means both are on disk; a crash in between leaves at
// most a one-sided message, which doctor restores. A receiver's copy on
// disk without the sender's is sent_partly.
func (s *Store) writeBoth(ctx context.Context, m OutgoingMessage, msg, sent Message) error {
	inbox, _ := s.files.ChatPath(m.To)
	outbox, _ := s.files.ChatPath(m.From)
	flushIn, err := s.files.WriteJSONL(ctx, inbox, msg)
	if err != nil {
		return err
	}
	flushOut, own, outErr := s.files.WriteJSONLChange(ctx, outbox, sent)
	if outErr == nil {
		s.sentOwn(own)
	} else {
		flushOut = nil
	}
	inErr, flushErr := flushBoth(flushIn, flushOut)
	if inErr != nil {
		return inErr
	}
	if outErr == nil {
		outErr = flushErr
	}
	if outErr != nil {
		return storage.CodeErr(storage.CodeSentPartly, "delivered to %s, but the sender's own copy is not on disk (%v); do not send it again: aipm doctor --repair restores the copy", m.To, outErr)
	}
	return nil
}

// flushBoth calls both flushes (out may be nil: nothing to flush) at the
// same time, each exactly once, and returns their errors: two fsyncs of
// two files overlap on the disk, where one after the other they take
// about twice as long.
func flushBoth(in, out func() error) (inErr, outErr error) {
	if out == nil {
		return in(), nil
	}
	done := make(chan error, 1)
	go func() { done <- out() }()
	inErr = in()
	return inErr, <-done
}

// Unread returns up to limit unread messages that others sent to agent,
// oldest first, and advances the agent's chat cursor exactly past them
// (unless peek; a peek may move it past a long run of the agent's own sent
// copies, as ReadOptions.Advance says).
func (s *Store) Unread(ctx context.Context, agent string, limit int, peek bool) ([]Message, bool, error) {
	res, err := s.files.ReadUnread(ctx, agent, storage.StreamChat, storage.ReadOptions{ReadOptions: lockedfile.ReadOptions{Limit: limit, Match: fromOthers(agent)}, Peek: peek, ScanKey: "from-others", Advance: true})
	if err != nil {
		return nil, false, err
	}
	msgs, err := s.decodeMessages(agent, res)
	if err == nil && !peek {
		// Read at once (a human's aipm inbox): surfaced and read together.
		ids := messageIDs(msgs)
		s.files.WriteReceipt(ctx, agent, storage.ReceiptSurfaced, "", "aipm inbox", ids)
		s.files.WriteReceipt(ctx, agent, storage.ReceiptRead, "", "aipm inbox", ids)
	}
	return msgs, res.More, err
}

// Deliver hands session ses up to limit unread messages that others sent
// to its agent, oldest first. They count as read once a later call of the
// session proves they were (Acknowledge), or come again (Unhand); a message
// that may have reached a client before comes back with Redelivered set.
func (s *Store) Deliver(ctx context.Context, ses Session, limit int) ([]Message, bool, error) {
	res, err := s.files.ReadUnread(ctx, ses.Agent, storage.StreamChat, storage.ReadOptions{ReadOptions: lockedfile.ReadOptions{Limit: limit, Match: fromOthers(ses.Agent)}, Session: ses.ID, Via: "get_pending_messages"})
	if err != nil {
		return nil, false, err
	}
	msgs, err := s.decodeMessages(ses.Agent, res)
	if err == nil {
		s.files.WriteReceipt(ctx, ses.Agent, storage.ReceiptSurfaced, ses.ID, "get_pending_messages", messageIDs(msgs))
	}
	return msgs, res.More, err
}

func (s *Store) decodeMessages(agent string, res storage.ReadResult) ([]Message, error) {
	path, _ := s.files.ChatPath(agent)
	out := make([]Message, 0, len(res.Records))
	for i, r := range res.Records {
		var m Message
		if err := json.Unmarshal(r.Data, &m); err != nil {
			return nil, fmt.Errorf("chat line %d: %w", r.Line, err)
		}
		m.Redelivered = res.Redelivered[i]
		out = append(out, m.served(lineOf(s.files.Rel(path), r.Line)))
	}
	return out, nil
}

// contextWindow bounds how far back Recent reads: constant cost whatever
// the history.
const contextWindow = 64 << 10

// Recent returns up to n messages of agent's chat log that end at or before
// what session has received (its read cursor, or the end of the batch it
// holds), oldest first. It reads at most the last 64 KiB before that.
func (s *Store) Recent(agent, session string, n int) ([]Message, error) {
	path, err := s.files.ChatPath(agent)
	if err != nil {
		return nil, err
	}
	cursorPath, _ := s.files.ReadCursorPath(agent)
	cursors, err := s.files.ReadCursors(cursorPath)
	if err != nil {
		return nil, err
	}
	end := storage.StartFor(storage.CursorOf(cursors, storage.StreamChat), session).Offset
	return s.tail(path, end, n)
}

// Tail returns up to n of the last messages of agent's chat log, read or
// not, oldest first; like Recent it reads at most the last 64 KiB, so its
// cost does not grow with the history (aipm web).
func (s *Store) Tail(agent string, n int) ([]Message, error) {
	path, err := s.files.ChatPath(agent)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return s.tail(path, fi.Size(), n)
}

// lastMessage returns the last complete message of agent's chat log, if any.
func (s *Store) lastMessage(agent string) (*Message, error) {
	msgs, err := s.Tail(agent, 1)
	if err != nil || len(msgs) == 0 {
		return nil, err
	}
	return &msgs[0], nil
}

// tail decodes up to n whole lines that end at or before offset end.
func (s *Store) tail(path string, end int64, n int) ([]Message, error) {
	if end <= 0 || n <= 0 {
		return nil, nil
	}
	f, err := lockedfile.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Read backwards in a window that doubles until it holds n messages
	// (or reaches contextWindow): one small read for the common case.
	for window := int64(4 << 10); ; window *= 2 {
		window = min(window, contextWindow)
		start := max(0, end-window)
		buf := make([]byte, end-start)
		if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
			return nil, s.files.Failed("read", path, err)
		}
		out := lastMessages(buf, start > 0, n, s.files.Rel(path))
		if len(out) == n || start == 0 || window == contextWindow {
			return out, nil
		}
	}
}

// lastMessages decodes up to n messages from the end of buf, oldest first;
// partial says buf's first line may be cut.
func lastMessages(buf []byte, partial bool, n int, rel string) []Message {
	lines := strings.Split(strings.TrimSuffix(string(buf), "\n"), "\n")
	if partial {
		lines = lines[1:]
	}
	var out []Message
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		if m, err := decodeMessage([]byte(lines[i])); err == nil {
			out = append(out, m.served(rel))
		}
	}
	slices.Reverse(out)
	return out
}

// Follow reads the chat log of agent past cur without a lock and without
// saving a cursor (for `aipm log --follow`): it returns the messages past
// cur and the cursor after them. A replaced or truncated file is handled
// as ReadUnread handles it.
func (s *Store) Follow(agent string, cur storage.Cursor) ([]Message, storage.Cursor, []*storage.LineError, error) {
	path, err := s.files.ChatPath(agent)
	if err != nil {
		return nil, cur, nil, err
	}
	res, err := lockedfile.ReadPast(path, cur, lockedfile.ReadOptions{})
	if err != nil {
		return nil, cur, nil, s.files.Failed("read", path, err)
	}
	for _, le := range res.Bad {
		le.Path = s.files.Rel(path)
	}
	msgs, bad := s.decodeLog(path, res.Records)
	return msgs, res.Next, unfinishedLine(s.files.Rel(path), res, append(res.Bad, bad...)), nil
}

// unfinishedLine adds to bad, the lines a reader of a log passed over, its
// unterminated last line if res reached one: never shown, and said once
// (aipm log, aipm notifications), since it may be a write in progress, or
// a writer that died.
func unfinishedLine(rel string, res storage.ReadResult, bad []*storage.LineError) []*storage.LineError {
	if res.Tail == 0 {
		return bad
	}
	return append(bad, &storage.LineError{Path: rel, Line: res.TailLine, Err: fmt.Errorf(
		"an unfinished last line (%d bytes without a newline): a writer may still be writing it; if it stays, aipm doctor reports it", res.Tail)})
}

// decodeLog decodes records as messages for Follow: a line that is a JSON
// object but not a message (a field of the wrong type) is reported like an
// invalid line, not fatal to the whole read.
func (s *Store) decodeLog(path string, recs []storage.Record) ([]Message, []*storage.LineError) {
	out := make([]Message, 0, len(recs))
	var bad []*storage.LineError
	for _, r := range recs {
		m, err := decodeMessage(r.Data)
		if err != nil {
			bad = append(bad, &storage.LineError{Path: s.files.Rel(path), Line: r.Line, Err: err})
			continue
		}
		out = append(out, m.served(lineOf(s.files.Rel(path), r.Line)))
	}
	return out, bad
}

// messageIDs are the ids of msgs.
func messageIDs(msgs []Message) []string {
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	return ids
}

// CatchUp moves agent's chat cursor past every line of its log, handing
// out and recording nothing: the agent has read its history. It is for a
// project built by internal/fixtures (benchmarks, tests), whose history
// went straight to the file.
func (s *Store) CatchUp(ctx context.Context, agent string) error {
	_, err := s.files.ReadUnread(ctx, agent, storage.StreamChat, storage.ReadOptions{ReadOptions: lockedfile.ReadOptions{Match: func(storage.Record) bool { return false }}})
	return err
}
