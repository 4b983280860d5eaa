package storage

import (
	"context"
	"encoding/json"
	"time"

	"aipm/internal/lockedfile"
)

// Receipt events.
const (
	// ReceiptSurfaced: the messages were told to a session's model (by a
	// client hook) or handed to it (get_pending_messages).
	ReceiptSurfaced = "surfaced"
	// ReceiptRead: the session that was handed them made its next call
	// (read means received, DESIGN section 4 rule 6).
	ReceiptRead = "read"
)

// receipt is one line of agents/<agent>/receipts.jsonl: what happened to
// messages the agent received, for the humans who ask when a message was
// seen (aipm log). Receipts are a record, never a rule: they are appended
// without an fsync, and a receipt that could not be written (a full disk,
// a crash) loses the record, not a message.
type receipt struct {
	ID         string    `json:"id"`
	Event      string    `json:"event"`
	SessionID  string    `json:"sessionId"`
	Via        string    `json:"via"`
	MessageIDs []string  `json:"messageIds"`
	At         time.Time `json:"at"`
}

// receiptsPath holds the agent's receipts.
func (l layout) receiptsPath(agent string) (string, error) {
	return l.agentFile(agent, "receipts.jsonl")
}

// WriteReceipt appends a receipt for ids, best effort (see receipt).
func (s *Files) WriteReceipt(ctx context.Context, agent, event, session, via string, ids []string) {
	if len(ids) == 0 {
		return
	}
	path, err := s.receiptsPath(agent)
	if err != nil {
		return
	}
	r := receipt{ID: NewID(prefixReceipt), Event: event, SessionID: session, Via: via, MessageIDs: ids, At: time.Now().UTC()}
	if line, err := json.Marshal(r); err == nil {
		_ = s.appendRecord(ctx, path, line) // a record: not fsynced, and its loss changes nothing
	}
}

// Seen is when a message was first surfaced to the agent's sessions and
// first read (zero: not yet), and how it was surfaced.
type Seen struct {
	SurfacedAt  time.Time `json:"surfacedAt,omitzero"`
	SurfacedVia string    `json:"surfacedVia,omitempty"`
	ReadAt      time.Time `json:"readAt,omitzero"`
	ReadVia     string    `json:"readVia,omitempty"`
}

// Receipts reads agent's receipts into what each message id went
// through (the first of each event). Lines that are not receipts are
// skipped.
func (s *Files) Receipts(agent string) (map[string]Seen, error) {
	path, err := s.receiptsPath(agent)
	if err != nil {
		return nil, err
	}
	recs, _, _, err := lockedfile.ReadAll(path)
	if err != nil {
		return nil, err
	}
	seen := map[string]Seen{}
	for _, rec := range recs {
		var r receipt
		if json.Unmarshal(rec.Data, &r) != nil || r.At.IsZero() {
			continue
		}
		for _, id := range r.MessageIDs {
			x := seen[id]
			switch {
			case r.Event == ReceiptSurfaced && x.SurfacedAt.IsZero():
				x.SurfacedAt, x.SurfacedVia = r.At, r.Via
			case r.Event == ReceiptRead && x.ReadAt.IsZero():
				x.ReadAt, x.ReadVia = r.At, r.Via
			}
			seen[id] = x
		}
	}
	return seen, nil
}
