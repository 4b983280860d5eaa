package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// inFlight is how young a message may be and still be a send between its
// two writes: doctor leaves it alone. (A variable for the kill tests.)
var inFlight = time.Minute

// copyOf is one copy of a message: whose chat.jsonl holds it, at which line.
type copyOf struct {
	agent string
	line  int
	msg   Message
}

// checkMirror is DESIGN section 4 rule 4 seen from doctor: every message
// between two agents is in both chat logs, the receiver's copy without
// receiverId and the sender's with it. A message in one file only (a send
// killed between its writes, a lock-less editor's save) is reported, and
// with repair its missing copy is appended, from the other one, under the
// file's lock and only if that id is not there yet: never twice. Messages
// younger than inFlight may still be in a send and are left alone, as are
// messages whose other party has no directory here (nothing to mirror to),
// and messages compaction dropped from the other file (compactedAway).
// A group message (receiverIds) is the same line in the sender's log and in
// each receiver's: every one missing is restored from any copy.
func (s *Store) checkMirror(ctx context.Context, repair bool) ([]storage.Problem, error) {
	cs, err := s.chatCopies()
	if err != nil || cs == nil {
		return nil, err
	}
	problems := s.checkTwoParty(ctx, repair, cs)
	return append(problems, s.checkGroups(ctx, repair, cs)...), nil
}

// rollGroupsForward writes the copies a killed group send left unwritten
// (checkGroups with repair), before compaction cuts a log: a log cut past a
// message excuses its absence (compactedAway), and a receiver would never
// get it. A two-party send needs none: its receiver's copy is written
// first.
func (s *Store) rollGroupsForward(ctx context.Context) ([]storage.Problem, error) {
	cs, err := s.chatCopies()
	if err != nil || cs == nil {
		return nil, err
	}
	return s.checkGroups(ctx, true, cs), nil
}

// youngMessage says whether m may still be in a send (younger than
// inFlight): the mirror checks leave it alone.
func youngMessage(m Message, now time.Time) bool {
	t, err := time.Parse(time.RFC3339Nano, m.CreatedAt)
	return err == nil && now.Sub(t) < inFlight
}

// checkTwoParty checks the copies of two-party messages.
func (s *Store) checkTwoParty(ctx context.Context, repair bool, cs *chatCopies) []storage.Problem {
	var problems []storage.Problem
	now := time.Now()
	young := func(m Message) bool { return youngMessage(m, now) }
	for _, id := range sortedKeys(cs.inbound) {
		c := cs.inbound[id]
		if _, ok := cs.outbound[id]; ok || c.msg.SenderID == storage.SystemSender || !cs.agents[c.msg.SenderID] || young(c.msg) || s.compactedAway(c.msg.SenderID, c.msg) {
			continue
		}
		sent := c.msg
		sent.ReceiverID = c.agent
		problems = append(problems, s.restoreCopy(ctx, repair, c, c.msg.SenderID, sent, "the sender's copy"))
	}
	for _, id := range sortedKeys(cs.outbound) {
		c := cs.outbound[id]
		if _, ok := cs.inbound[id]; ok || !cs.agents[c.msg.ReceiverID] || young(c.msg) || s.compactedAway(c.msg.ReceiverID, c.msg) {
			continue
		}
		got := c.msg
		got.ReceiverID = ""
		problems = append(problems, s.restoreCopy(ctx, repair, c, c.msg.ReceiverID, got, "the receiver's copy"))
	}
	return problems
}

// checkGroups checks the copies of group messages: every party's log
// holds it.
func (s *Store) checkGroups(ctx context.Context, repair bool, cs *chatCopies) []storage.Problem {
	var problems []storage.Problem
	now := time.Now()
	cfg, _ := s.files.LoadConfig() // nil when broken: the config check reports it
	configured := func(a string) bool {
		if cfg == nil {
			return false
		}
		_, ok := cfg.Agent(a)
		return ok
	}
	for _, id := range sortedGroupKeys(cs.group) {
		g := cs.group[id]
		if youngMessage(g.have.msg, now) {
			continue
		}
		problems = append(problems, s.restoreGroup(ctx, repair, cs, g, configured)...)
	}
	return problems
}

// groupCopies are the copies of one group message: every copy is the same
// line (naming all receivers), so any one restores the others.
type groupCopies struct {
	have    copyOf          // the first copy found
	holders map[string]bool // agents whose chat log holds it
}

// restoreGroup reports each party (the sender, each receiver) of a group
// message whose chat log lacks it and, with repair, appends it there: a
// group send killed after its first copy is rolled forward to every copy.
// A party with no directory yet gets its copy when it is a configured
// agent (configured): its first message may be the one a kill cut off.
func (s *Store) restoreGroup(ctx context.Context, repair bool, cs *chatCopies, g *groupCopies, configured func(string) bool) []storage.Problem {
	var out []storage.Problem
	for i, party := range append([]string{g.have.msg.SenderID}, g.have.msg.ReceiverIDs...) {
		if g.holders[party] || !cs.agents[party] && !configured(party) || s.compactedAway(party, g.have.msg) {
			continue
		}
		what := "a receiver's copy"
		if i == 0 {
			what = "the sender's copy"
		}
		out = append(out, s.restoreCopy(ctx, repair, g.have, party, g.have.msg, what))
	}
	return out
}

func sortedGroupKeys(m map[string]*groupCopies) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// chatCopies are the copies of every message in the agents' chat logs.
type chatCopies struct {
	agents   map[string]bool   // agents with a directory here
	inbound  map[string]copyOf // receiver's copies by id
	outbound map[string]copyOf // sender's copies by id
	group    map[string]*groupCopies
}

// chatCopies reads every agent's chat log (nil without agents/); invalid
// lines are left to the line check.
func (s *Store) chatCopies() (*chatCopies, error) {
	entries, err := os.ReadDir(s.files.AgentsDir())
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, s.files.Failed("read", s.files.AgentsDir(), err)
	}
	cs := &chatCopies{agents: map[string]bool{}, inbound: map[string]copyOf{}, outbound: map[string]copyOf{}, group: map[string]*groupCopies{}}
	for _, e := range entries {
		if !e.IsDir() || storage.CheckAgentID(e.Name()) != nil {
			continue
		}
		cs.agents[e.Name()] = true
		path, _ := s.files.ChatPath(e.Name())
		recs, _, _, err := storage.ReadAll(path)
		if err != nil {
			return nil, s.files.Failed("read", path, err)
		}
		for _, r := range recs {
			m, err := decodeMessage(r.Data)
			if err != nil {
				continue // reported by the line check
			}
			c := copyOf{agent: e.Name(), line: r.Line, msg: m}
			switch {
			case m.ReceiverIDs != nil:
				cs.addGroupCopy(c)
			case m.ReceiverID == "":
				cs.inbound[m.ID] = c
			default:
				cs.outbound[m.ID] = c
			}
		}
	}
	return cs, nil
}

// restoreCopy reports a one-sided message and, with repair, appends the
// missing copy to to's chat log unless its id is there already.
func (s *Store) restoreCopy(ctx context.Context, repair bool, have copyOf, to string, missing Message, what string) storage.Problem {
	dst, _ := s.files.ChatPath(to)
	src, _ := s.files.ChatPath(have.agent)
	p := storage.Problem{Path: s.files.Rel(src), Line: have.line, Reason: fmt.Sprintf("message %s is missing from %s (%s)", missing.ID, s.files.Rel(dst), what), Repairable: true}
	if !repair {
		return p
	}
	line, err := json.Marshal(missing)
	if err == nil {
		id, _ := json.Marshal(missing.ID)
		err = s.files.AppendUnless(ctx, dst, line, []byte(`"id":`+string(id)))
	}
	if err != nil {
		p.Reason += fmt.Sprintf(": could not restore it: %v", err)
		return p
	}
	p.Repaired = true
	p.Reason += ": restored from " + filepath.Base(filepath.Dir(src)) + "'s copy"
	return p
}

func sortedKeys(m map[string]copyOf) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (cs *chatCopies) addGroupCopy(c copyOf) {
	g := cs.group[c.msg.ID]
	if g == nil {
		g = &groupCopies{have: c, holders: map[string]bool{}}
		cs.group[c.msg.ID] = g
	}
	g.holders[c.agent] = true
}
