package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// checkTargets is the one rule of whom a send names: exactly one of a
// receiver (target_agent_id), a list (target_agent_ids) or a config group
// (target_group).
func checkTargets(to string, list []string, group string) error {
	n := 0
	for _, set := range []bool{to != "", list != nil, group != ""} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return storage.CodeErr(storage.CodeAgentNotFound, "name who the message is for: target_agent_id (one agent), target_agent_ids (a list) or target_group (a group of config.toml)")
	case n > 1:
		return storage.CodeErr(storage.CodeTooManyTargets, "give exactly one of target_agent_id, target_agent_ids and target_group: they are three ways of saying who the message is for")
	}
	return nil
}

// receiversOf resolves and checks the receivers of a group message: the
// list as given, or the group's members without the sender (a group may
// contain its own members' senders). Each must be a configured agent other
// than the sender, named once, at most MaxReceivers.
func (s *Store) receiversOf(cfg *storage.Config, m OutgoingMessage) ([]string, error) {
	list := m.Receivers
	if m.Group != "" {
		members, ok := cfg.Group(m.Group)
		if !ok {
			return nil, storage.CodeErr(storage.CodeGroupNotFound, "there is no group %q in config.toml: define it under [groups] (e.g. reviewers = [\"a1\", \"a2\"]), or name the agents one by one", storage.Clip(m.Group, storage.MaxEchoedID))
		}
		list = slices.DeleteFunc(slices.Clone(members), func(a string) bool { return a == m.From })
		if len(list) == 0 {
			return nil, storage.CodeErr(storage.CodeCannotMessageSelf, "group %q has no member but you (%s): there is nobody to send it to", m.Group, m.From)
		}
	}
	if len(list) == 0 {
		return nil, storage.CodeErr(storage.CodeAgentNotFound, "target_agent_ids is empty: name at least one agent")
	}
	if len(list) > storage.MaxReceivers {
		return nil, storage.CodeErr(storage.CodeTooManyReceivers, "%d receivers is too many: one message goes to at most %d; split the list", len(list), storage.MaxReceivers)
	}
	seen := map[string]bool{}
	for _, to := range list {
		if err := s.checkRecipient(cfg, m.From, to); err != nil {
			return nil, err
		}
		if seen[to] {
			return nil, storage.CodeErr(storage.CodeDuplicateReceiver, "the receivers name %s twice: name each receiver once", to)
		}
		seen[to] = true
	}
	return list, nil
}

// testHookGroupWrote, in tests, runs before the first copy of a group
// message is written (n = 0), after each copy (n copies so far) and, with
// n = -1, once all are flushed.
var testHookGroupWrote func(n int)

// sendGroup writes a group message: one line in the sender's chat log and
// one in each receiver's, every copy the same line naming all receivers
// (receiverIds). The first copy decides whether it was sent: a send killed
// after it is rolled forward by aipm doctor --repair (which restores every
// missing copy from any copy), one killed before it left nothing. Like the
// dual write, one file lock at a time; every copy is written, then every
// copy flushed. Success means every copy is on disk.
//
// Without conversation_id a group message is not a conversation turn, and
// the sender's copy is written first; with one, it is a turn of that group
// conversation (groupTurn), and the copy of the party whose turn it makes
// it is written first (turnOrder).
func (s *Store) sendGroup(ctx context.Context, cfg *storage.Config, m OutgoingMessage) (Message, error) {
	receivers, err := s.receiversOf(cfg, m)
	if err != nil {
		return Message{}, err
	}
	if err := s.checkRelatedTask(m.RelatedTaskID); err != nil {
		return Message{}, err
	}
	msg := Message{
		ID: storage.NewID(storage.PrefixMessage), SenderID: m.From, ReceiverIDs: receivers, TargetGroup: m.Group, Content: m.Content,
		CreatedAt: time.Now().UTC().Format(timeFormat), ConversationID: m.ConversationID,
		RelatedTaskID: m.RelatedTaskID, Kind: m.Kind,
	}
	if m.ConversationID != "" {
		write := func(next string) error { return s.writeCopies(ctx, msg, turnOrder(next, m.From, receivers)) }
		return msg, s.groupTurn(ctx, cfg, m.From, m.ConversationID, receivers, write)
	}
	return msg, s.writeCopies(ctx, msg, append([]string{m.From}, receivers...))
}

// turnOrder is the order a group conversation's turn from `from` to
// receivers is written in: first the copy of next, the party whose turn it
// makes it, then the sender's, then the other receivers'. Since the first
// copy decides whether the message was sent at all, a turn that counts
// (Conversation.turn: written, or sent_partly) has always reached the party
// that now holds the turn; one whose next copy could not be written left
// nothing, and the turn stays the sender's.
func turnOrder(next, from string, receivers []string) []string {
	out := []string{next, from}
	for _, r := range receivers {
		if r != next {
			out = append(out, r)
		}
	}
	return out
}

// writeCopies writes msg to each agent's chat log in order, then flushes
// them all. A failure after the first copy is sent_partly: the copies
// written stand, and doctor --repair completes the rest.
func (s *Store) writeCopies(ctx context.Context, msg Message, agents []string) error {
	flushes := make([]func() error, 0, len(agents))
	var failed error
	if testHookGroupWrote != nil {
		testHookGroupWrote(0)
	}
	for i, a := range agents {
		path, err := s.files.ChatPath(a)
		if err == nil {
			var flush func() error
			if flush, err = s.files.WriteJSONL(ctx, path, msg); err == nil {
				flushes = append(flushes, flush)
			}
		}
		if err != nil {
			failed = fmt.Errorf("%s's copy: %w", a, err)
			break
		}
		if testHookGroupWrote != nil {
			testHookGroupWrote(i + 1)
		}
	}
	for _, flush := range flushes {
		if err := flush(); err != nil && failed == nil {
			failed = err
		}
	}
	switch {
	case failed == nil:
		if testHookGroupWrote != nil {
			testHookGroupWrote(-1)
		}
		return nil
	case len(flushes) == 0:
		return failed // nothing written: nothing sent
	}
	return storage.CodeErr(storage.CodeSentPartly, "message %s to %s is written only in part (%v); do not send it again: aipm doctor --repair writes the missing copies", msg.ID, strings.Join(msg.ReceiverIDs, ", "), failed)
}

// checkRelatedTask checks a message's related_task_id, if any.
func (s *Store) checkRelatedTask(id string) error {
	if id == "" {
		return nil
	}
	if err := storage.CheckID(storage.PrefixTask, id); err != nil {
		return storage.CodeErr(storage.CodeTaskNotFound, "related_task_id: %v", err)
	}
	if _, err := s.Task(id); err != nil {
		return storage.CodeErr(storage.CodeTaskNotFound, "related_task_id: %v", err)
	}
	return nil
}

// ReceivedBy says whether this copy, found in owner's chat log, is one
// owner received (not one it sent): the line for a two-party message
// without receiverId, every copy of a group message but the sender's.
func (m Message) ReceivedBy(owner string) bool {
	return m.ReceiverID == "" && m.SenderID != owner
}

// Audience names whom the message went to, as a copy in owner's chat log
// shows it: its receiverId, a group message's receivers (and group), or
// owner itself for a two-party message it received.
func (m Message) Audience(owner string) string {
	switch {
	case m.ReceiverID != "":
		return m.ReceiverID
	case m.ReceiverIDs != nil && m.TargetGroup != "":
		return m.TargetGroup + " (" + strings.Join(m.ReceiverIDs, ", ") + ")"
	case m.ReceiverIDs != nil:
		return strings.Join(m.ReceiverIDs, ", ")
	}
	return owner
}
