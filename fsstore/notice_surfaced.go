package fsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tidwall/gjson"

	"aipm/fsstore/internal/storage"
	"aipm/internal/lockedfile"
)

// Surfaced is what a session's model has been told of (DESIGN section 15),
// by a client hook or by a tool response, so that neither tells it again:
// the messages and notifications before its marks, the conversations and
// delegations it names while they still wait, and the Stop hook's own
// record. It lives in the session's document and ends with it.
type Surfaced struct {
	Chat          storage.Mark `json:"chat,omitzero"`
	Notifications storage.Mark `json:"notifications,omitzero"`
	Items         []string     `json:"items,omitempty"`
	// StopInterrupt is the interrupt a Stop hook last kept the model
	// working for: it does so once per interrupt.
	StopInterrupt string `json:"stopInterrupt,omitempty"`
	// StopBlocks counts the Stop hook's blocks since the model last used a
	// tool: past MaxStopBlocks it lets the turn end, whatever waits.
	StopBlocks int `json:"stopBlocks,omitempty"`
}

// MaxStopBlocks is how many times in a row a Stop hook may keep a model
// working before the model uses a tool (the clients' own limit is higher:
// Claude Code ends the turn after 8).
const MaxStopBlocks = 2

func (a Surfaced) equal(b Surfaced) bool {
	return a.Chat == b.Chat && a.Notifications == b.Notifications && slices.Equal(a.Items, b.Items) &&
		a.StopInterrupt == b.StopInterrupt && a.StopBlocks == b.StopBlocks
}

// Notices is what waits for a session that its model has not been told of
// (Store.Notices): each kind only for the sessions whose tools act on it.
type Notices struct {
	// Interrupt is the unread interrupt that stops the session, told or not
	// (a client hook refuses every other tool while it waits).
	Interrupt *Notification
	// Notifications are those that concern the session, unread and untold
	// (interrupts included), oldest first.
	Notifications []Notification
	// Messages (chat sessions) are received messages, unread and untold,
	// oldest first, with their id, sender and time only (a notice never
	// shows a text); never handed out (reading stays get_pending_messages').
	Messages []Message
	// Requests (chat sessions) are conversations that wait for the agent
	// to accept them; Ended, conversations whose end it has not heard.
	Requests []Conversation
	Ended    []Conversation
	// Delegations (chat sessions) wait for the session to process them.
	Delegations []Delegation

	// From is the record they were read against; To, the record once
	// they are told (Store.Surface).
	From, To Surfaced
}

// Empty says whether there is nothing untold.
func (n Notices) Empty() bool {
	return len(n.Notifications) == 0 && len(n.Messages) == 0 && len(n.Requests) == 0 &&
		len(n.Ended) == 0 && len(n.Delegations) == 0
}

// Notices reads, without taking or consuming anything, what waits for ses
// that its model has not been told of (DESIGN section 15). The interrupt
// is read whether told or not.
func (s *Store) Notices(ctx context.Context, cfg *storage.Config, ses Session) (Notices, error) {
	n := Notices{From: ses.Surfaced, To: ses.Surfaced}
	n.To.Items = nil
	unread, err := s.Interrupt(ctx, ses)
	if err != nil {
		return n, err
	}
	n.Interrupt = unread.Interrupt
	if unread.New > 0 {
		if n.Notifications, n.To.Notifications, err = s.untoldNotifications(ctx, ses); err != nil {
			return n, err
		}
	}
	if ses.Purpose != storage.PurposeChat {
		return n, nil
	}
	if n.Messages, n.To.Chat, err = s.untoldMessages(ctx, ses); err != nil {
		return n, err
	}
	return n, s.untoldWork(ctx, cfg, ses, &n)
}

// untoldNotifications reads the unread notifications that concern ses
// past its mark, and the mark past them.
func (s *Store) untoldNotifications(ctx context.Context, ses Session) ([]Notification, storage.Mark, error) {
	mark := ses.Surfaced.Notifications
	ns, res, err := s.readNotificationRecords(ctx, ses, storage.ReadOptions{Peek: true}, nil)
	if err != nil {
		return nil, mark, err
	}
	var out []Notification
	for i, r := range res.Records {
		if !mark.Covers(res.Next.Inode, r.Offset) {
			out = append(out, ns[i])
		}
	}
	return out, markAfter(res), nil
}

// untoldMessages reads the messages the new_message notice announces to
// ses (announcedMessages) that it was not told of: past its mark.
func (s *Store) untoldMessages(ctx context.Context, ses Session) ([]Message, storage.Mark, error) {
	mark := ses.Surfaced.Chat
	msgs, res, err := s.announcedMessages(ctx, ses, lockedfile.ReadOptions{SkipTo: mark.Cursor()})
	if err != nil {
		return nil, mark, err
	}
	if !res.Skipped {
		// Not found where it says (a log replaced since, or a record gone),
		// or behind the read: it covers nothing read here.
		mark = storage.Mark{}
	}
	var out []Message
	for i, r := range res.Records {
		if !mark.Covers(res.Next.Inode, r.Offset) {
			out = append(out, msgs[i])
		}
	}
	return out, markAfter(res), nil
}

// NewMessageNotices are the new_message items of get_notifications for
// chat session ses: the messages the notice announces (announcedMessages),
// told or not, oldest first, at most limit (0: all); more says others
// wait. Nothing for a task session.
func (s *Store) NewMessageNotices(ctx context.Context, ses Session, limit int) (msgs []Message, more bool, err error) {
	if ses.Purpose != storage.PurposeChat {
		return nil, false, nil
	}
	msgs, res, err := s.announcedMessages(ctx, ses, lockedfile.ReadOptions{Limit: limit})
	return msgs, res.More, err
}

// announcedMessages is the one rule of what the new_message notice
// announces to chat session ses, on the notification line and in
// get_notifications alike (DESIGN section 6): the messages others sent its
// agent that it has not received (nor holds in a batch), within the
// notice's time to live (expiredNotice: an older one stays unread and is
// delivered, but announced nowhere). A peek, as opt says (Limit, SkipTo);
// messages come with their id, sender, time and whether they may have
// reached a client before, never their text (a notice never shows one).
func (s *Store) announcedMessages(ctx context.Context, ses Session, opt lockedfile.ReadOptions) ([]Message, storage.ReadResult, error) {
	now := time.Now()
	received := fromOthers(ses.Agent)
	opt.Match = func(r storage.Record) bool {
		return received(r) && !s.expiredNotice(Message{CreatedAt: gjson.GetBytes(r.Data, "createdAt").Str}, now)
	}
	// What Match refuses stays refused (a message expires for good), for
	// as long as the time to live is the same.
	key := fmt.Sprintf("announced:%d", s.files.NotificationTTL(storage.NotifyNewMessage))
	res, err := s.files.ReadUnread(ctx, ses.Agent, storage.StreamChat, storage.ReadOptions{ReadOptions: opt, Peek: true, Session: ses.ID, ScanKey: key})
	if err != nil {
		return nil, res, err
	}
	msgs := make([]Message, len(res.Records))
	for i, r := range res.Records {
		f := gjson.GetManyBytes(r.Data, "id", "senderId", "createdAt")
		msgs[i] = Message{ID: f[0].Str, SenderID: f[1].Str, CreatedAt: f[2].Str, Redelivered: res.Redelivered[i]}
	}
	return msgs, res, nil
}

// expiredNotice says whether the received message m is too old to be
// announced as new (the new_message notice's time to live, by the one rule
// of expiry): it stays unread and is delivered, but not announced.
func (s *Store) expiredNotice(m Message, now time.Time) bool {
	at, err := time.Parse(time.RFC3339Nano, m.CreatedAt)
	return err == nil && s.expired(Notification{Type: storage.NotifyNewMessage, CreatedAt: at}, now)
}

// markAfter is the mark just past everything read: what a reader that
// saw res has seen.
func markAfter(res storage.ReadResult) storage.Mark {
	m := storage.Mark{Inode: res.Next.Inode, Offset: res.Next.Offset, Line: res.Next.Line, ID: res.Next.LastID}
	if n := len(res.Records); n > 0 && res.Records[n-1].End().Offset > m.Offset {
		last := res.Records[n-1]
		m.Offset, m.Line, m.ID = last.End().Offset, last.End().Line, gjson.GetBytes(last.Data, "id").Str
	}
	return m
}

// untoldWork adds to n the conversations and delegations that wait for
// chat session ses and were not told, and records in n.To those that
// still wait (a told item that no longer waits is forgotten).
func (s *Store) untoldWork(ctx context.Context, cfg *storage.Config, ses Session, n *Notices) error {
	told := func(key string) bool {
		n.To.Items = append(n.To.Items, key)
		return slices.Contains(ses.Surfaced.Items, key)
	}
	convs, err := s.conversationsOf(ctx, cfg, ses.Agent)
	if err != nil {
		return err
	}
	for _, c := range convs {
		switch {
		case c.owesNews(ses.Agent):
			if !told("end:" + c.ID) {
				n.Ended = append(n.Ended, c)
			}
		case c.awaitsAcceptance(ses.Agent):
			if !told("req:" + c.ID) {
				n.Requests = append(n.Requests, c)
			}
		}
	}
	dlgs, err := s.Delegations().List(DelegationFilter{Agent: ses.Agent, Open: true})
	if err != nil {
		return err
	}
	for _, d := range dlgs {
		if s.waitsForChat(d, ses.ID) && !told("dlg:"+d.ID) {
			n.Delegations = append(n.Delegations, d)
		}
	}
	slices.Sort(n.To.Items) // conversations come in no fixed order: a record, not a list
	return nil
}

// Surface records that the session's model was told n (Store.Notices) by
// via (a hook event, say), with edit applied to the record (the Stop
// hook's counters), and the messages' receipts; unless
// another process told it something since n was read: then nothing is
// written and told is false, and the caller reads again rather than tell
// the same thing twice. A session that ended is not written to (told is
// false). The record is the session's told file (toldPath), rewritten in
// place: it is written at nearly every tool call, so it costs no rename,
// through a descriptor this process keeps (lockedfile.HeldRecord).
func (s *Store) Surface(ctx context.Context, ses Session, n Notices, via string, edit func(*Surfaced)) (told bool, err error) {
	to := n.To
	if edit != nil {
		edit(&to)
	}
	if to.equal(n.From) {
		return true, nil
	}
	if cur, err := s.session(ses.ID); err != nil || !cur.EndedAt.IsZero() {
		return false, nil // an ended session is told nothing more
	}
	path, err := s.toldPath(ses.ID)
	if err != nil {
		return false, err
	}
	err = s.caches.told.Get(path, storage.ModePrivateFile).Swap(ctx, true, func(old []byte) ([]byte, error) {
		if !decodeTold(old).equal(n.From) {
			return nil, errTold
		}
		return json.Marshal(to)
	})
	switch {
	case errors.Is(err, errTold):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("record what session %s was told: %w", ses.ID, err)
	}
	if _, err := s.session(ses.ID); errors.Is(err, storage.ErrNotFound) {
		os.Remove(path) // the session was removed meanwhile: no record outlives it
		return false, nil
	}
	s.files.WriteReceipt(ctx, ses.Agent, storage.ReceiptSurfaced, ses.ID, via, messageIDs(n.Messages))
	return true, nil
}

// toldPath is the record of what session id's model was told
// (sessions/.<id>.told), removed with the session.
func (s *Store) toldPath(id string) (string, error) {
	if err := storage.CheckID(storage.PrefixSession, id); err != nil {
		return "", err
	}
	return filepath.Join(s.files.CollectionDir(storage.Sessions), "."+id+".told"), nil
}

// decodeTold decodes a told record; none, or one a power cut tore, is
// nothing told (the notices may be told once more, never lost).
func decodeTold(data []byte) Surfaced {
	var t Surfaced
	if len(data) > 0 && json.Unmarshal(data, &t) != nil {
		return Surfaced{}
	}
	return t
}

// withTold fills ses.Surfaced from its told record.
func (s *Store) withTold(ses Session) Session {
	if path, err := s.toldPath(ses.ID); err == nil {
		data, _ := s.caches.told.Get(path, storage.ModePrivateFile).Read() // unreadable: nothing told
		ses.Surfaced = decodeTold(data)
	}
	return ses
}

// errTold says another process told the session something first.
var errTold = errors.New("told by another process")

// LiveSessionsOf returns agent's sessions that are live at now and whose
// aipm serve process runs, read without a lock or a sweep.
func (s *Store) LiveSessionsOf(agent string, now time.Time) ([]Session, error) {
	return s.LiveSessionsFor(agent, "", now)
}

// LiveSessionsFor is LiveSessionsOf of agent's sessions of purpose (""
// any): those of another purpose are not asked after, nor is what their
// models were told read (a hook's, which answers for one purpose).
func (s *Store) LiveSessionsFor(agent, purpose string, now time.Time) ([]Session, error) {
	live, err := s.liveSessions(agent, purpose, now)
	for i := range live {
		live[i] = s.withTold(live[i])
	}
	return live, err
}

// Alive says whether the session is live at now and its aipm serve
// process runs (what a sweep keeps).
func (s Session) Alive(now time.Time) bool {
	remove, _ := sessionVerdict(s, now)
	return !remove
}

// Session returns the session document id names, with what its model
// was told (Surfaced).
func (s *Store) Session(id string) (Session, error) {
	ses, err := s.session(id)
	if err != nil {
		return ses, err
	}
	return s.withTold(ses), nil
}

// wakeLockPath is the lock a client's idle-wake hook holds while it waits
// for session id (sessions/.<id>.wake): one waits per session.
func (s *Store) wakeLockPath(id string) string {
	return filepath.Join(s.files.CollectionDir(storage.Sessions), "."+id+".wake")
}

// TryWakeLock takes session ses's idle-wake lock without waiting; ok is
// false when another hook holds it. The caller closes f to release it.
func (s *Store) TryWakeLock(ses Session) (f *os.File, ok bool, err error) {
	if err := storage.CheckID(storage.PrefixSession, ses.ID); err != nil {
		return nil, false, err
	}
	f, ok, err = lockedfile.TryLockFile(s.wakeLockPath(ses.ID), storage.ModePrivateFile)
	if err != nil {
		return nil, false, fmt.Errorf("wake lock of %s: %w", ses.ID, err)
	}
	return f, ok, nil
}
