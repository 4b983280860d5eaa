package fsstore

import (
	"context"
	"slices"
	"time"

	"github.com/tidwall/gjson"

	"aipm/fsstore/internal/storage"
	"aipm/internal/lockedfile"
)

// MaxMarkRead is how many message ids one mark_read names at most.
const MaxMarkRead = 100

// MarkedRead is a message mark_read named, and when it was read.
type MarkedRead struct {
	ID     string    `json:"message_id"`
	ReadAt time.Time `json:"read_at"`
}

// MarkRead is the explicit read of seed 000 ("既読管理"), for session ses
// after its call settled what the session held (read means received: the
// call is the session's next call); naming a message of the batch the
// session still holds reads that batch (readNamed). Every id must name a
// message others sent to ses's agent that a session of it was handed;
// the answer says when each was read. An id not handed yet, or not a
// message the agent received, is refused with what to do, and nothing is
// written. A read whose receipt was lost (receipts are a record, not a
// rule) gets one now.
func (s *Store) MarkRead(ctx context.Context, ses Session, ids []string) ([]MarkedRead, error) {
	ids, err := checkMarkRead(ids)
	if err != nil {
		return nil, err
	}
	unread, err := s.files.ReadUnread(ctx, ses.Agent, storage.StreamChat, storage.ReadOptions{ReadOptions: lockedfile.ReadOptions{Match: fromOthers(ses.Agent)}, Peek: true, Session: ses.ID})
	if err != nil {
		return nil, err
	}
	for _, r := range unread.Records {
		if id := gjson.GetBytes(r.Data, "id").Str; slices.Contains(ids, id) {
			return nil, storage.CodeErr(storage.CodeMessageNotHanded, "message %s has not been handed to you yet: call get_pending_messages, read it, then mark it read", id)
		}
	}
	seen, err := s.files.Receipts(ses.Agent)
	if err != nil {
		return nil, err
	}
	var lost []string // read, by the cursor, with no read receipt
	for _, id := range ids {
		if seen[id].ReadAt.IsZero() {
			lost = append(lost, id)
		}
	}
	if len(lost) > 0 {
		if err := s.checkReceived(ses.Agent, lost); err != nil {
			return nil, err
		}
	}
	batch, err := s.readNamed(ctx, ses, ids)
	if err != nil {
		return nil, err
	}
	lost = slices.DeleteFunc(lost, func(id string) bool { return slices.Contains(batch, id) }) // its receipt is written
	s.files.WriteReceipt(ctx, ses.Agent, storage.ReceiptRead, ses.ID, "mark_read", lost)
	out := make([]MarkedRead, len(ids))
	now := time.Now().UTC()
	for i, id := range ids {
		out[i] = MarkedRead{ID: id, ReadAt: seen[id].ReadAt}
		if out[i].ReadAt.IsZero() {
			out[i].ReadAt = now
		}
	}
	return out, nil
}

// readNamed commits the chat batch ses holds when ids name a message of
// it, and returns the batch's messages: naming one proves that the answer
// which handed the batch was read, whatever the link could tell
// (mcpserver/links.go).
func (s *Store) readNamed(ctx context.Context, ses Session, ids []string) ([]string, error) {
	read, _, err := s.files.AcknowledgeWhere(ctx, ses.Agent, ses.ID, "mark_read", func(stream string, p *storage.PendingBatch) bool {
		return stream == storage.StreamChat && slices.ContainsFunc(ids, func(id string) bool { return slices.Contains(p.MessageIDs, id) })
	})
	return read, err
}

// checkMarkRead checks mark_read's ids and drops repeats.
func checkMarkRead(ids []string) ([]string, error) {
	switch {
	case len(ids) == 0:
		return nil, storage.CodeErr(storage.CodeMessageRequired, "message_ids is empty: name the messages get_pending_messages returned")
	case len(ids) > MaxMarkRead:
		return nil, storage.CodeErr(storage.CodeMessageRequired, "message_ids names %d messages, at most %d: mark them in several calls", len(ids), MaxMarkRead)
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if err := storage.CheckID(storage.PrefixMessage, id); err != nil {
			return nil, storage.CodeErr(storage.CodeMessageNotFound, "message_ids: %v", err)
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

// checkReceived says whether every id names a message others sent to
// agent that lies in its chat log (before the cursor: the caller knows
// they are not unread). It reads the whole log: only for reads whose
// receipt is missing.
func (s *Store) checkReceived(agent string, ids []string) error {
	path, err := s.files.ChatPath(agent)
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	fromOther := fromOthers(agent)
	_, err = lockedfile.ReadPast(path, storage.Cursor{}, lockedfile.ReadOptions{Match: func(r storage.Record) bool {
		if id := gjson.GetBytes(r.Data, "id").Str; want[id] && fromOther(r) {
			delete(want, id)
		}
		return false
	}})
	if err != nil {
		return s.files.Failed("read", path, err)
	}
	for _, id := range ids {
		if want[id] {
			return storage.CodeErr(storage.CodeMessageNotFound, "message %s is not a message you received: name the ids get_pending_messages returned", id)
		}
	}
	return nil
}
