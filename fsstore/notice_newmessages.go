package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"fmt"
	"strings"
)

// The new_message notice (NotifyNewMessage; seeds 000 and 004, "通知タイプ
// の拡張"): a chat session is told, on the response of whatever tool it
// calls, that messages wait for it, by sender. It is not a line of
// notifications.jsonl: it is read from the chat log itself (the received
// messages past the session's cursor that its model was not told of), so
// a send writes nothing more, the notice ends when the message is read,
// and notices of one sender coalesce by construction. Its time to live
// ([notifications.ttl] new_message) bounds how old a message may be and
// still be announced; an older one stays unread, and is delivered, but is
// not announced.

// NewMessages is the new_message notice of a chat session: the received
// messages it was not told of, unread, counted by sender.
type NewMessages struct {
	// Senders counts them by sender, in the order they first arrived.
	Senders []senderCount
	// Messages are the messages told (for their surfaced receipts).
	Messages []Message
	// Through is the session's chat mark once they are told.
	Through storage.Mark
}

// senderCount is how many new messages one sender sent.
type senderCount struct {
	Sender string `json:"sender"`
	Count  int    `json:"count"`
}

// Count is the number of new messages.
func (n NewMessages) Count() int { return len(n.Messages) }

// Text is the notice, coalesced by sender: "3 new messages from lead, 1
// from coder".
func (n NewMessages) Text() string {
	if len(n.Senders) == 0 {
		return ""
	}
	parts := make([]string, len(n.Senders))
	for i, c := range n.Senders {
		parts[i] = fmt.Sprintf("%d from %s", c.Count, c.Sender)
	}
	noun := "new messages"
	if n.Senders[0].Count == 1 {
		noun = "new message"
	}
	parts[0] = fmt.Sprintf("%d %s from %s", n.Senders[0].Count, noun, n.Senders[0].Sender)
	return strings.Join(parts, ", ")
}

// NewMessagesFor is the new_message notice of session ses: nothing for a
// task session (chat is a chat session's to read). While neither the chat
// log nor read.json changed since this process last found nothing new for
// ses, it answers after two stats.
func (s *Store) NewMessagesFor(ctx context.Context, ses Session) (NewMessages, error) {
	if ses.Purpose != storage.PurposeChat {
		return NewMessages{}, nil
	}
	stamps, cacheable := s.streamStamps(ses.Agent, storage.StreamChat)
	mark := ses.Surfaced.Chat
	key := fmt.Sprintf("%s\x00%d\x00%d", ses.ID, mark.Inode, mark.Offset)
	if cacheable {
		if _, ok := s.caches.quietChat.Get(key, stamps...); ok {
			return NewMessages{}, nil
		}
	}
	msgs, through, err := s.untoldMessages(ctx, ses)
	if err != nil {
		return NewMessages{}, err
	}
	if len(msgs) == 0 {
		if cacheable {
			s.caches.quietChat.Put(key, struct{}{}, stamps...)
		}
		return NewMessages{}, nil
	}
	n := NewMessages{Messages: msgs, Through: through}
	at := map[string]int{}
	for _, m := range msgs {
		i, ok := at[m.SenderID]
		if !ok {
			i = len(n.Senders)
			at[m.SenderID] = i
			n.Senders = append(n.Senders, senderCount{Sender: m.SenderID})
		}
		n.Senders[i].Count++
	}
	return n, nil
}
