package fsstore

import (
	"aipm/fsstore/internal/storage"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// Conversation states (DESIGN section 9).
const (
	ConvPending     = "pending"
	ConvActive      = "active"
	ConvTerminating = "terminating"
	ConvEnded       = "ended"
	ConvExpired     = "expired"
)

// Why a conversation ended.
const (
	ReasonInitiatorEnded   = "initiator_ended"
	ReasonParticipantEnded = "participant_ended"
	ReasonMaxTurns         = "max_turns"
	ReasonTimeout          = "timeout"
	ReasonSessionExpired   = "session_expired"
	reasonNeverAccepted    = "expired" // pending past its timeout: the participant never took it
)

// Limits of start_conversation.
const (
	DefaultMaxTurns = 20
	MinMaxTurns     = 2
	MaxMaxTurns     = 40
)

// convTransitions is the one table of conversation state changes. A pending
// conversation may also be ended by a party (its initiator withdrawing it,
// its participant declining) before it is taken.
var convTransitions = map[string][]string{
	ConvPending:     {ConvActive, ConvExpired, ConvTerminating},
	ConvActive:      {ConvTerminating},
	ConvTerminating: {ConvEnded},
}

// Transition is one entry of a conversation's history.
type Transition struct {
	State  string    `json:"state"`
	At     time.Time `json:"at"`
	By     string    `json:"by"`
	Reason string    `json:"reason,omitempty"`
}

// Conversation is conversations/<id>.json: a turn-based exchange between
// two AI agents (seed 001), or among three or more (a group conversation:
// Participants instead of Participant, turns in a fixed order).
type Conversation struct {
	ID          string `json:"id"`
	Initiator   string `json:"initiatorId"`
	Participant string `json:"participantId,omitempty"`
	// Participants, in a group conversation, are the others in turn order
	// (the initiator takes the first turn); Accepted are those of them
	// whose get_next_action has taken the request.
	Participants []string `json:"participantIds,omitempty"`
	Accepted     []string `json:"acceptedBy,omitempty"`
	Purpose      string   `json:"purpose,omitempty"`
	State        string   `json:"state"`
	MaxTurns     int      `json:"maxTurns"`
	Turns        int      `json:"turns"`
	// TaskID is set when the conversation was started for a task's delegation.
	TaskID    string    `json:"taskId,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	// LastActivityAt is the last turn, or the start or acceptance; the
	// active timeout runs from it.
	LastActivityAt time.Time `json:"lastActivityAt"`
	EndedAt        time.Time `json:"endedAt,omitzero"`
	EndReason      string    `json:"endReason,omitempty"`
	EndedBy        string    `json:"endedBy,omitempty"`
	// Told lists the parties whose get_next_action has said
	// conversation_ended (or who had no session left to tell).
	Told    []string     `json:"told,omitempty"`
	History []Transition `json:"history"`
	// Previous is the last conversation among the same parties that had
	// ended when this one started (seed 001: a new request names it, so
	// that the model can look back).
	Previous *PreviousConversation `json:"previous,omitempty"`
}

// PreviousConversation names an earlier conversation among the same
// parties.
type PreviousConversation struct {
	ID      string `json:"id"`
	Purpose string `json:"purpose,omitempty"`
}

// between names the parties for a sentence: "between a and b", or "among
// a, b, c" for a group.
func (c *Conversation) between() string {
	if c.IsGroup() {
		return "among " + strings.Join(c.Parties(), ", ")
	}
	return "between " + c.Initiator + " and " + c.Participant
}

// IsGroup says whether the conversation has more than two parties.
func (c *Conversation) IsGroup() bool { return len(c.Participants) > 0 }

// Parties are the initiator and the participants, in turn order.
func (c *Conversation) Parties() []string {
	if c.IsGroup() {
		return append([]string{c.Initiator}, c.Participants...)
	}
	return []string{c.Initiator, c.Participant}
}

// hasParty says whether agent is one of the parties.
func (c *Conversation) hasParty(agent string) bool {
	return slices.Contains(c.Parties(), agent)
}

// Others are the parties that are not agent, in turn order.
func (c *Conversation) Others(agent string) []string {
	return slices.DeleteFunc(c.Parties(), func(a string) bool { return a == agent })
}

// Other is the party that is not agent; in a group conversation, the
// others joined by ", " (for the texts that name them).
func (c *Conversation) Other(agent string) string {
	return strings.Join(c.Others(agent), ", ")
}

// NextSpeaker is whose turn it is in a group conversation: the initiator,
// then each participant in order, round-robin ("" in a two-party one,
// where either may speak).
func (c *Conversation) NextSpeaker() string {
	if !c.IsGroup() {
		return ""
	}
	p := c.Parties()
	return p[c.Turns%len(p)]
}

// awaitsAcceptance says whether agent is a participant that has not taken
// the request yet: the participant of a pending two-party conversation, a
// participant of an open group conversation not among Accepted.
func (c *Conversation) awaitsAcceptance(agent string) bool {
	if !c.IsGroup() {
		return c.State == ConvPending && c.Participant == agent
	}
	return c.Open() && slices.Contains(c.Participants, agent) && !slices.Contains(c.Accepted, agent)
}

// Open says whether turns may still be taken (pending or active).
func (c *Conversation) Open() bool { return c.State == ConvPending || c.State == ConvActive }

// TurnsLeft is how many turns remain before max_turns.
func (c *Conversation) TurnsLeft() int { return max(0, c.MaxTurns-c.Turns) }

// owesNews says whether agent must still be told that the conversation
// ended: both parties of a terminating one, and the initiator of one that
// expired untaken.
func (c *Conversation) owesNews(agent string) bool {
	if slices.Contains(c.Told, agent) {
		return false
	}
	switch c.State {
	case ConvTerminating:
		return c.hasParty(agent)
	case ConvExpired:
		return agent == c.Initiator
	}
	return false
}

// closed says whether the conversation needs nothing more from anyone, so
// it leaves the index of open conversations.
func (c *Conversation) closed() bool {
	return c.State == ConvEnded || (c.State == ConvExpired && !c.owesNews(c.Initiator))
}

// move is the one place a conversation changes state: it checks the table,
// records the transition, and stamps the end of a conversation that stops
// taking turns.
func (c *Conversation) move(to, by, reason string, now time.Time) error {
	if !slices.Contains(convTransitions[c.State], to) {
		return fmt.Errorf("conversation %s cannot go from %s to %s", c.ID, c.State, to)
	}
	c.State = to
	c.History = append(c.History, Transition{State: to, At: now, By: by, Reason: reason})
	if to == ConvTerminating || to == ConvExpired {
		c.EndedAt, c.EndReason, c.EndedBy = now, reason, by
	}
	return nil
}

// tell records that agent has been told of the end; once both parties of a
// terminating conversation have been, it is ended.
func (c *Conversation) tell(agent string, now time.Time) {
	if !c.owesNews(agent) {
		return
	}
	c.Told = append(c.Told, agent)
	if c.State == ConvTerminating && !slices.ContainsFunc(c.Parties(), c.owesNews) {
		c.move(ConvEnded, agent, "", now) // terminating -> ended is always allowed
	}
}

// turn is the one rule of a turn, in a conversation of two or of a group,
// as read under the conversations' lock: from's turn is written (write),
// then counted. A turn that could not be written at all is not counted
// (the sender may send it again: err is the write's); one written in part
// (sent_partly, returned as written) is, since doctor --repair completes it:
// the write's first copy is the one of the party whose turn it makes it (a
// two-party send writes the receiver's copy first, a group turn the next
// party's: turnOrder), so a counted turn has reached that party.
func (c *Conversation) turn(from string, now time.Time, write func() error) (written, err error) {
	var ce *storage.CodeError
	if written = write(); written != nil && !(errors.As(written, &ce) && ce.Code == storage.CodeSentPartly) {
		return nil, written // nothing written: the turn is still from's
	}
	return written, c.countTurn(from, now)
}

// countTurn counts a turn by from at now, in a conversation of two or of a
// group: the turn that reaches max_turns moves it to terminating (reason
// max_turns).
func (c *Conversation) countTurn(from string, now time.Time) error {
	c.Turns++
	c.LastActivityAt = now
	if c.Turns >= c.MaxTurns {
		return c.move(ConvTerminating, from, ReasonMaxTurns, now)
	}
	return nil
}

// Deadline is when the conversation times out if nothing happens (zero
// when no timeout applies): pending until taken, active until the next turn.
func (c *Conversation) Deadline(cfg *storage.Config) time.Time {
	switch c.State {
	case ConvPending:
		return c.CreatedAt.Add(cfg.Defaults.ConversationPendingTimeout.Duration)
	case ConvActive:
		return c.LastActivityAt.Add(cfg.Defaults.ConversationActiveTimeout.Duration)
	}
	return time.Time{}
}

// applyTimeout moves a conversation past its deadline (DESIGN section 9:
// whoever reads it applies it) and reports whether it changed.
func (c *Conversation) applyTimeout(cfg *storage.Config, now time.Time) bool {
	d := c.Deadline(cfg)
	if d.IsZero() || now.Before(d) {
		return false
	}
	if c.State == ConvPending {
		c.move(ConvExpired, storage.SystemSender, reasonNeverAccepted, now)
	} else {
		c.move(ConvTerminating, storage.SystemSender, ReasonTimeout, now)
	}
	return true
}

// convIndex is conversations/index.json: the conversations that are not
// closed yet, by set of parties (the ids sorted, joined by "|": a pair for
// a two-party conversation), so that uniqueness in both directions (and in
// any order of a group) is one lookup and an agent finds its open
// conversations without reading the whole directory. The conversation
// documents are the truth; the index only says which ones to read.
type convIndex struct {
	Pairs map[string][]string `json:"pairs"`
	// Last is, by set of parties, the conversation among them that ended
	// last: the one a new conversation among them names (Previous).
	Last map[string]string `json:"last,omitempty"`
}

// ended records that c, among its parties, ended last.
func (idx *convIndex) ended(c Conversation) {
	if idx.Last == nil {
		idx.Last = map[string]string{}
	}
	idx.Last[c.key()] = c.ID
}

// partyKey is the index key of a set of parties.
func partyKey(parties []string) string {
	p := slices.Clone(parties)
	slices.Sort(p)
	return strings.Join(p, "|")
}

// key is c's index key.
func (c *Conversation) key() string { return partyKey(c.Parties()) }

func (s *Store) convIndexPath() string {
	return filepath.Join(s.files.CollectionDir(storage.Conversations), "index.json")
}

// readConvIndex reads the index; a missing or damaged one is rebuilt from
// the documents (the first conversation, or a human deleted or broke it),
// and the next change writes it back.
func (s *Store) readConvIndex() (convIndex, error) {
	var idx convIndex
	err := s.files.ReadDoc(s.convIndexPath(), &idx)
	var le *storage.LineError
	if errors.Is(err, storage.ErrNotFound) || errors.As(err, &le) {
		return s.rebuildConvIndex()
	}
	if idx.Pairs == nil {
		idx.Pairs = map[string][]string{}
	}
	return idx, err
}

func (s *Store) rebuildConvIndex() (convIndex, error) {
	idx := convIndex{Pairs: map[string][]string{}}
	endedAt := map[string]time.Time{}
	err := storage.EachDoc(s.files, storage.Conversations, func(_ string, c Conversation) error {
		k := c.key()
		switch {
		case !c.closed():
			idx.Pairs[k] = append(idx.Pairs[k], c.ID)
		case c.EndedAt.After(endedAt[k]):
			endedAt[k] = c.EndedAt
			idx.ended(c)
		}
		return nil
	})
	return idx, err
}

func (s *Store) writeConvIndex(idx convIndex) error {
	for k, ids := range idx.Pairs {
		if len(ids) == 0 {
			delete(idx.Pairs, k)
		}
	}
	return s.files.WriteDoc(s.convIndexPath(), idx, storage.ModeFile)
}

// readConversation reads one document; a malformed or unknown id is
// conversation_not_found.
func (s *Store) readConversation(id string) (Conversation, string, error) {
	path, err := s.files.DocPath(storage.Conversations, id)
	if err != nil {
		return Conversation{}, "", storage.CodeErr(storage.CodeConversationNotFound, "%v", err)
	}
	var c Conversation
	if err := s.files.ReadDoc(path, &c); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return Conversation{}, path, storage.CodeErr(storage.CodeConversationNotFound, "conversation %s does not exist: check the id (get_next_action and send_message responses carry it)", id)
		}
		return Conversation{}, path, err
	}
	return c, path, nil
}

// updateConversation is the locked read-change-write of one conversation:
// it holds conversations/.lock, reads the document, applies any timeout that
// is due, calls fn (which may return ErrNoChange) and writes the result;
// a conversation that is closed leaves the index in the same critical
// section. Every change of a conversation goes through here.
func (s *Store) updateConversation(ctx context.Context, cfg *storage.Config, id string, fn func(c *Conversation, now time.Time) error) (Conversation, error) {
	unlock, err := s.files.LockDir(ctx, s.files.CollectionDir(storage.Conversations))
	if err != nil {
		return Conversation{}, err
	}
	defer unlock()
	return s.updateConversationLocked(cfg, id, fn)
}

func (s *Store) updateConversationLocked(cfg *storage.Config, id string, fn func(c *Conversation, now time.Time) error) (Conversation, error) {
	c, path, err := s.readConversation(id)
	if err != nil {
		return Conversation{}, err
	}
	now := time.Now().UTC()
	changed := c.applyTimeout(cfg, now)
	if err := fn(&c, now); errors.Is(err, storage.ErrNoChange) {
		if !changed {
			return c, nil
		}
	} else if err != nil {
		if changed { // the timeout holds even when the change is refused
			if werr := s.writeConversationLocked(path, c); werr != nil {
				return c, werr
			}
		}
		return c, err
	}
	return c, s.writeConversationLocked(path, c)
}

func (s *Store) writeConversationLocked(path string, c Conversation) error {
	if err := s.files.WriteDoc(path, c, storage.ModeFile); err != nil {
		return err
	}
	if !c.closed() {
		return nil
	}
	idx, err := s.readConvIndex()
	if err != nil {
		return err
	}
	k := c.key()
	if i := slices.Index(idx.Pairs[k], c.ID); i >= 0 {
		idx.Pairs[k] = slices.Delete(idx.Pairs[k], i, i+1)
		idx.ended(c) // it closes now: the last among its parties
		return s.writeConvIndex(idx)
	}
	return nil
}

// NewConversation is what start_conversation asks for.
type NewConversation struct {
	From, To, Purpose, InitialMessage, TaskID string
	// Participants, instead of To, start a group conversation: two or
	// more other AI agents, in turn order after From.
	Participants []string
	// DelegationID is the delegation the conversation carries out; when
	// empty, From's one processing delegation for To, if there is exactly
	// one. The conversation takes the delegation's task id.
	DelegationID string
	MaxTurns     int // 0: DefaultMaxTurns
}

// Start checks and creates a pending conversation from From to
// To (DESIGN section 9) and sends the initial message, if any, as its first
// turn. Refusals carry seed 001's codes and change nothing. Uniqueness of
// an open conversation between the two, in either direction, is checked and
// written under conversations/.lock, through the index.
func (cb ConversationBook) Start(ctx context.Context, cfg *storage.Config, in NewConversation) (Conversation, *Message, error) {
	s := cb.s
	if err := s.checkStartParties(cfg, in); err != nil {
		return Conversation{}, nil, err
	}
	if in.MaxTurns == 0 {
		in.MaxTurns = DefaultMaxTurns
	}
	if in.MaxTurns < MinMaxTurns || in.MaxTurns > MaxMaxTurns {
		return Conversation{}, nil, storage.CodeErr(storage.CodeInvalidMaxTurns, "max_turns %d is out of range: use %d to %d (default %d)", in.MaxTurns, MinMaxTurns, MaxMaxTurns, DefaultMaxTurns)
	}
	if err := storage.CheckText("purpose", in.Purpose); err != nil {
		return Conversation{}, nil, err
	}
	if in.InitialMessage != "" {
		if err := checkContent(in.InitialMessage); err != nil {
			return Conversation{}, nil, err
		}
	}
	dlg, err := s.startDelegation(in)
	if err != nil {
		return Conversation{}, nil, err
	}
	if dlg != nil && in.TaskID == "" {
		in.TaskID = dlg.TaskID
	}
	if in.TaskID != "" {
		if _, err := s.Task(in.TaskID); err != nil {
			return Conversation{}, nil, storage.CodeErr(storage.CodeTaskNotFound, "%v", err)
		}
	}
	now := time.Now().UTC()
	c := Conversation{
		ID: storage.NewID(storage.PrefixConversation), Initiator: in.From, Participant: in.To, Participants: in.Participants, Purpose: in.Purpose,
		State: ConvPending, MaxTurns: in.MaxTurns, TaskID: in.TaskID, CreatedAt: now, LastActivityAt: now,
		History: []Transition{{State: ConvPending, At: now, By: in.From}},
	}
	if err := s.createConversation(ctx, cfg, &c); err != nil {
		return Conversation{}, nil, err
	}
	if dlg != nil {
		if err := s.recordConversation(ctx, dlg.ID, c.ID); err != nil {
			return c, nil, fmt.Errorf("conversation %s started, but delegation %s does not list it yet: %w", c.ID, dlg.ID, err)
		}
	}
	if in.InitialMessage == "" {
		return c, nil, nil
	}
	msg, after, err := s.SendTurn(ctx, cfg, turnMessage(c, in.From, in.InitialMessage))
	if err != nil {
		return c, nil, fmt.Errorf("conversation %s started, but its initial message was not sent (send it with send_conversation_message): %w", c.ID, err)
	}
	if after != nil {
		c = *after
	}
	return c, &msg, nil
}

// checkStartParties checks whom a new conversation is with: exactly one of
// To and Participants.
func (s *Store) checkStartParties(cfg *storage.Config, in NewConversation) error {
	switch {
	case in.To != "" && in.Participants != nil:
		return storage.CodeErr(storage.CodeTooManyTargets, "give target_agent_id (a conversation with one agent) or participant_agent_ids (a group conversation), not both")
	case in.Participants != nil:
		return s.checkGroupParties(cfg, in.From, in.Participants)
	}
	return s.checkConversationParties(cfg, in.From, in.To)
}

// startDelegation is the delegation a new conversation carries out: for a
// group conversation only one named by id, whose target must be a
// participant.
func (s *Store) startDelegation(in NewConversation) (*Delegation, error) {
	if in.Participants == nil {
		return s.delegationFor(in.From, in.To, in.DelegationID)
	}
	if in.DelegationID == "" {
		return nil, nil
	}
	d, err := s.delegation(in.DelegationID)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(in.Participants, d.Target) {
		return nil, storage.CodeErr(storage.CodeDelegationTargetMismatch, "delegation %s is to talk to %s, who is not among participant_agent_ids", d.ID, d.Target)
	}
	return s.delegationFor(in.From, d.Target, in.DelegationID)
}

// turnMessage is agent's turn in c: to the other party, or in a group
// conversation to every other party at once.
func turnMessage(c Conversation, agent, content string) OutgoingMessage {
	m := OutgoingMessage{From: agent, Content: content, ConversationID: c.ID}
	if c.IsGroup() {
		m.Receivers = c.Others(agent)
	} else {
		m.To = c.Other(agent)
	}
	return m
}

// checkConversationParties is seed 001's order of refusals.
func (s *Store) checkConversationParties(cfg *storage.Config, from, to string) error {
	if to == from {
		return storage.CodeErr(storage.CodeCannotConversationWithSelf, "you cannot start a conversation with yourself (%s): choose another AI agent", from)
	}
	if err := s.checkRecipient(cfg, from, to); err != nil {
		return err
	}
	target, _ := cfg.Agent(to)
	if target.Type != storage.AgentAI {
		return storage.CodeErr(storage.CodeCannotStartConversationWithHuman, "%s is a human: conversations are between AI agents; talk to humans with send_message", to)
	}
	if me, _ := cfg.Agent(from); me.Type != storage.AgentAI {
		return storage.CodeErr(storage.CodeCannotStartConversationWithHuman, "you (%s) are not an AI agent: conversations are between AI agents; use send_message", from)
	}
	return nil
}

func (s *Store) createConversation(ctx context.Context, cfg *storage.Config, c *Conversation) error {
	unlock, err := s.files.LockDir(ctx, s.files.CollectionDir(storage.Conversations))
	if err != nil {
		return err
	}
	defer unlock()
	idx, err := s.readConvIndex()
	if err != nil {
		return err
	}
	k := c.key()
	kept := idx.Pairs[k][:0:0]
	var ended []Conversation // indexed as open, but ended: closed or not
	for _, id := range idx.Pairs[k] {
		other, err := s.updateConversationLocked(cfg, id, func(*Conversation, time.Time) error { return storage.ErrNoChange })
		if err != nil {
			var ce *storage.CodeError
			if errors.As(err, &ce) && ce.Code == storage.CodeConversationNotFound {
				continue // a start that died between index and document
			}
			return err
		}
		if other.Open() {
			return storage.CodeErr(storage.CodeConversationAlreadyActive, "a conversation %s is already %s (%s, started by %s): continue it with send_conversation_message, or end it with end_conversation first", c.between(), other.State, other.ID, other.Initiator)
		}
		ended = append(ended, other)
		if !other.closed() {
			kept = append(kept, id)
		}
	}
	// Index first, then the document: a crash in between leaves an index
	// entry without a document, which the next start drops (above).
	idx, err = s.readConvIndex() // updateConversationLocked may have rewritten it
	if err != nil {
		return err
	}
	idx.Pairs[k] = append(kept, c.ID)
	if last := idx.Last[k]; last != "" {
		if prev, _, err := s.readConversation(last); err == nil {
			ended = append(ended, prev)
		}
	}
	slices.SortFunc(ended, func(a, b Conversation) int { return a.EndedAt.Compare(b.EndedAt) })
	for _, other := range ended {
		if other.closed() {
			idx.ended(other)
		}
	}
	if len(ended) > 0 {
		prev := ended[len(ended)-1]
		c.Previous = &PreviousConversation{ID: prev.ID, Purpose: prev.Purpose}
	}
	if err := s.writeConvIndex(idx); err != nil {
		return err
	}
	path, _ := s.files.DocPath(storage.Conversations, c.ID)
	return s.files.WriteDoc(path, c, storage.ModeFile)
}

// conversationsOf returns agent's conversations that are not closed, oldest
// first, with due timeouts applied. It reads the index and the few
// documents it names, without a lock unless a timeout must be written.
func (s *Store) conversationsOf(ctx context.Context, cfg *storage.Config, agent string) ([]Conversation, error) {
	idx, err := s.keptConvIndex() // no conversation ever, the common case: two stats
	if err != nil {
		return nil, err
	}
	var out []Conversation
	now := time.Now().UTC()
	for k, ids := range idx.Pairs {
		if !slices.Contains(strings.Split(k, "|"), agent) {
			continue
		}
		for _, id := range ids {
			c, _, err := s.readConversation(id)
			if err != nil {
				continue // not written yet, or damaged (doctor reports it)
			}
			if d := c.Deadline(cfg); !d.IsZero() && !now.Before(d) {
				if c, err = s.updateConversation(ctx, cfg, id, func(*Conversation, time.Time) error { return storage.ErrNoChange }); err != nil {
					return nil, err
				}
			}
			if !c.closed() {
				out = append(out, c)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// openConversation finds the conversation a call without conversation_id
// means: agent's one open conversation (with `with`, when given).
func (s *Store) openConversation(ctx context.Context, cfg *storage.Config, agent, with string) (Conversation, error) {
	all, err := s.conversationsOf(ctx, cfg, agent)
	if err != nil {
		return Conversation{}, err
	}
	var open []Conversation
	for _, c := range all {
		if c.Open() && (with == "" || !c.IsGroup() && c.Other(agent) == with) {
			open = append(open, c)
		}
	}
	switch len(open) {
	case 0:
		return Conversation{}, storage.CodeErr(storage.CodeNoActiveConversation, "you have no pending or active conversation: start one with start_conversation, or pass conversation_id")
	case 1:
		return open[0], nil
	}
	ids := make([]string, len(open))
	for i, c := range open {
		ids[i] = c.ID + " with " + c.Other(agent)
	}
	return Conversation{}, storage.CodeErr(storage.CodeConversationAmbiguous, "you have %d open conversations (%s): pass conversation_id", len(open), strings.Join(ids, ", "))
}

// partyConversation reads conversation id for agent, refusing a non-party.
func (s *Store) partyConversation(ctx context.Context, cfg *storage.Config, agent, id string) (Conversation, error) {
	if id == "" {
		return s.openConversation(ctx, cfg, agent, "")
	}
	c, err := s.conversation(ctx, cfg, id)
	if err != nil {
		return c, err
	}
	if !c.hasParty(agent) {
		return Conversation{}, storage.CodeErr(storage.CodeNotConversationParticipant, "conversation %s is %s, not you: you can act only on your own conversations", id, c.between())
	}
	return c, nil
}

// End ends agent's conversation id (or its one open
// conversation): it becomes terminating with reason initiator_ended or
// participant_ended, and each party's get_next_action will say
// conversation_ended once. Ending one that already stopped is refused
// (conversation_not_active) and changes nothing.
func (cb ConversationBook) End(ctx context.Context, cfg *storage.Config, agent, id string) (Conversation, error) {
	s := cb.s
	c, err := s.partyConversation(ctx, cfg, agent, id)
	if err != nil {
		return c, err
	}
	return s.updateConversation(ctx, cfg, c.ID, func(c *Conversation, now time.Time) error {
		if !c.Open() {
			return storage.CodeErr(storage.CodeConversationNotActive, "conversation %s already ended (%s, %s, by %s): there is nothing to end; call get_next_action", c.ID, c.State, c.EndReason, c.EndedBy)
		}
		reason := ReasonParticipantEnded
		if agent == c.Initiator {
			reason = ReasonInitiatorEnded
		}
		return c.move(ConvTerminating, agent, reason, now)
	})
}

// conversationForTurn decides which conversation a message from m.From to
// m.To belongs to (DESIGN sections 7 and 9), before the message is
// written: an explicit id must be a conversation of these two; between two
// AI agents without an id, their open conversation, if any; otherwise none
// (""). The turn is checked, written and counted by twoPartyTurn.
func (s *Store) conversationForTurn(ctx context.Context, cfg *storage.Config, m OutgoingMessage) (string, error) {
	if m.ConversationID != "" {
		if _, err := s.partyConversation(ctx, cfg, m.From, m.ConversationID); err != nil {
			return "", err
		}
		return m.ConversationID, nil
	}
	from, _ := cfg.Agent(m.From)
	to, _ := cfg.Agent(m.To)
	if from.Type != storage.AgentAI || to.Type != storage.AgentAI {
		return "", nil // humans and the system talk outside conversations
	}
	c, err := s.openConversation(ctx, cfg, m.From, m.To)
	var ce *storage.CodeError
	if errors.As(err, &ce) && ce.Code == storage.CodeNoActiveConversation {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return c.ID, nil
}

// twoPartyTurn checks m's turn in conversation id of two, writes it
// (write) and counts it, all under the conversations' lock, as groupTurn
// does for a group: the conversation must be between m.From and m.To and
// open; the turn counts only once written (Conversation.turn).
func (s *Store) twoPartyTurn(ctx context.Context, cfg *storage.Config, m OutgoingMessage, id string, write func() error) error {
	var written error // a sent_partly, returned once the turn is counted
	_, err := s.updateConversation(ctx, cfg, id, func(c *Conversation, now time.Time) error {
		if c.IsGroup() {
			return storage.CodeErr(storage.CodeNotConversationParticipant, "conversation %s is a group conversation (%s): send your turn with send_conversation_message, which goes to every party", c.ID, strings.Join(c.Parties(), ", "))
		}
		if c.Other(m.From) != m.To {
			return storage.CodeErr(storage.CodeNotConversationParticipant, "conversation %s is between %s and %s: send to %s, or leave conversation_id out", c.ID, c.Initiator, c.Participant, c.Other(m.From))
		}
		if !c.Open() {
			return storage.CodeErr(storage.CodeConversationNotActive, "conversation %s is %s (%s): it takes no more turns; start a new one with start_conversation if you need to", c.ID, c.State, c.EndReason)
		}
		var err error
		written, err = c.turn(m.From, now, write)
		return err
	})
	if err == nil {
		err = written
	}
	return err
}

// tellEnded records that agent has been told conversation id ended. It
// reports false when there was nothing to tell any more.
func (s *Store) tellEnded(ctx context.Context, cfg *storage.Config, agent, id string) (Conversation, bool, error) {
	told := false
	c, err := s.updateConversation(ctx, cfg, id, func(c *Conversation, now time.Time) error {
		if !c.owesNews(agent) {
			return storage.ErrNoChange
		}
		c.tell(agent, now)
		told = true
		return nil
	})
	return c, told, err
}

// accept makes a pending conversation active for its participant; false
// when it is no longer pending.
func (s *Store) accept(ctx context.Context, cfg *storage.Config, agent, id string) (Conversation, bool, error) {
	ok := false
	c, err := s.updateConversation(ctx, cfg, id, func(c *Conversation, now time.Time) error {
		if !c.awaitsAcceptance(agent) {
			return storage.ErrNoChange
		}
		ok = true
		c.LastActivityAt = now
		if c.IsGroup() {
			c.Accepted = append(c.Accepted, agent)
			if c.State != ConvPending {
				return nil
			}
		}
		return c.move(ConvActive, agent, "", now)
	})
	return c, ok, err
}

// endConversationsOf is the hook run when agent's chat session ends: its
// open conversations (those it started, and those it took) end with reason
// session_expired, and the agent, gone, counts as told. Requests it never
// took stay pending for its next chat session.
func (s *Store) endConversationsOf(ctx context.Context, cfg *storage.Config, agent string) error {
	mine, err := s.conversationsOf(ctx, cfg, agent)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range mine {
		if c.awaitsAcceptance(agent) {
			continue
		}
		_, err := s.updateConversation(ctx, cfg, c.ID, func(c *Conversation, now time.Time) error {
			if c.Open() {
				if err := c.move(ConvTerminating, agent, ReasonSessionExpired, now); err != nil {
					return err
				}
			}
			if !c.owesNews(agent) {
				return storage.ErrNoChange
			}
			c.tell(agent, now)
			return nil
		})
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// conversation returns one conversation, with a due timeout applied.
func (s *Store) conversation(ctx context.Context, cfg *storage.Config, id string) (Conversation, error) {
	c, path, err := s.readConversation(id)
	if err != nil {
		return c, err
	}
	if d := c.Deadline(cfg); !d.IsZero() && !time.Now().Before(d) {
		c, err = s.updateConversation(ctx, cfg, id, func(*Conversation, time.Time) error { return storage.ErrNoChange })
	}
	return c.served(s.files.Rel(path)), err
}

// List returns the conversations not yet closed (from the
// index), or all of them, oldest first, with due timeouts applied.
func (cb ConversationBook) List(ctx context.Context, cfg *storage.Config, all bool) ([]Conversation, error) {
	s := cb.s
	var ids []string
	if all {
		if err := storage.EachDoc(s.files, storage.Conversations, func(_ string, c Conversation) error { ids = append(ids, c.ID); return nil }); err != nil {
			return nil, err
		}
	} else {
		if _, err := os.Stat(s.files.CollectionDir(storage.Conversations)); errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		idx, err := s.readConvIndex()
		if err != nil {
			return nil, err
		}
		for _, pair := range idx.Pairs {
			ids = append(ids, pair...)
		}
	}
	sort.Strings(ids)
	out := make([]Conversation, 0, len(ids))
	for _, id := range ids {
		c, err := s.conversation(ctx, cfg, id)
		if err != nil {
			var ce *storage.CodeError
			if errors.As(err, &ce) && ce.Code == storage.CodeConversationNotFound {
				continue
			}
			return nil, err
		}
		if all || !c.closed() {
			out = append(out, c)
		}
	}
	return out, nil
}

// Of returns agent's conversations in every state, the newest first, at
// most limit of them; more says older ones were left out. It reads every
// conversation document: it serves a model looking back, not a hot path.
func (cb ConversationBook) Of(ctx context.Context, cfg *storage.Config, agent string, limit int) ([]Conversation, bool, error) {
	s := cb.s
	var mine []Conversation
	err := storage.EachDoc(s.files, storage.Conversations, func(_ string, c Conversation) error {
		if c.hasParty(agent) {
			mine = append(mine, c)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	slices.SortFunc(mine, func(a, b Conversation) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(b.ID, a.ID))
	})
	more := len(mine) > limit
	mine = mine[:min(len(mine), limit)]
	for i, c := range mine {
		if !c.closed() {
			if mine[i], err = s.conversation(ctx, cfg, c.ID); err != nil { // a due timeout applied
				return nil, false, err
			}
		}
	}
	return mine, more, nil
}

// Messages returns the conversation and up to limit messages of conversation id as
// agent's own chat log holds them (both directions), oldest first; the
// newest when there are more. Only a party may read them.
func (cb ConversationBook) Messages(ctx context.Context, cfg *storage.Config, agent, id string, limit int) (Conversation, []Message, bool, error) {
	s := cb.s
	if id == "" {
		return Conversation{}, nil, false, storage.CodeErr(storage.CodeConversationNotFound, "conversation_id is empty: pass the cnv_ id of the conversation")
	}
	c, err := s.partyConversation(ctx, cfg, agent, id)
	if err != nil {
		return c, nil, false, err
	}
	msgs, more, err := s.conversationLog(c, agent, limit)
	return c, msgs, more, err
}

// Log returns conversation id and all its messages as its
// initiator's chat log holds them, oldest first, for a human's CLI.
func (cb ConversationBook) Log(ctx context.Context, cfg *storage.Config, id string) (Conversation, []Message, error) {
	s := cb.s
	c, err := s.conversation(ctx, cfg, id)
	if err != nil {
		return c, nil, err
	}
	msgs, _, err := s.conversationLog(c, c.Initiator, 0)
	return c, msgs, err
}

// conversationLog reads the messages of c from agent's chat log.
func (s *Store) conversationLog(c Conversation, agent string, limit int) ([]Message, bool, error) {
	path, err := s.files.ChatPath(agent)
	if err != nil {
		return nil, false, err
	}
	recs, _, _, err := storage.ReadAll(path)
	if err != nil {
		return nil, false, err
	}
	needle := []byte(c.ID)
	out := []Message{}
	for _, r := range recs {
		if !bytes.Contains(r.Data, needle) {
			continue // most lines: no decoding
		}
		var m Message
		if json.Unmarshal(r.Data, &m) == nil && m.ConversationID == c.ID {
			out = append(out, m.served(lineOf(s.files.Rel(path), r.Line)))
		}
	}
	more := limit > 0 && len(out) > limit
	if more {
		out = out[len(out)-limit:]
	}
	return out, more, nil
}

// Send sends content from agent to the other party of
// conversation id (or of agent's one open conversation) as a turn.
func (cb ConversationBook) Send(ctx context.Context, cfg *storage.Config, agent, id, content string) (Message, Conversation, error) {
	s := cb.s
	if err := checkContent(content); err != nil {
		return Message{}, Conversation{}, err
	}
	c, err := s.partyConversation(ctx, cfg, agent, id)
	if err != nil {
		return Message{}, c, err
	}
	msg, after, err := s.SendTurn(ctx, cfg, turnMessage(c, agent, content))
	if after != nil {
		c = *after
	}
	return msg, c, err
}

// ConversationBook is conversations/: turn-based conversations between
// two AI agents (DESIGN section 9).
type ConversationBook struct{ s *Store }

// Conversations is the project's turn-based conversations between AI agents.
func (s *Store) Conversations() ConversationBook { return ConversationBook{s: s} }
