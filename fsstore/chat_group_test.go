package fsstore

import (
	"aipm/fsstore/internal/storage"
	"aipm/internal/helperproc"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func init() {
	helperRoles["group-send"] = helperGroupSend
}

// helperGroupSend sends group messages alice -> bob, carol, dave. With n
// >= 0 it sends one and stops for good at instant n of the send (0: before
// any copy, k: after k copies, -1: all flushed), printing "at n" there;
// with n < -1 it sends -n messages, printing "acked ID" for each.
func helperGroupSend(h *helperProc) error {
	cfg, err := h.store.files.LoadConfig()
	if err != nil {
		return err
	}
	stopAt, _ := strconv.Atoi(h.arg)
	count := 1
	if stopAt < -1 {
		count = -stopAt
	} else {
		testHookGroupWrote = func(n int) {
			if n == stopAt {
				fmt.Fprintln(h.out, "at", n)
				h.out.Flush()
				time.Sleep(time.Hour) // until killed
			}
		}
	}
	for i := 0; i < count; i++ {
		m, err := h.store.Send(h.ctx, cfg, OutgoingMessage{From: "alice", Receivers: []string{"bob", "carol", "dave"}, Content: fmt.Sprintf("broadcast %d", i)})
		if err != nil {
			return err
		}
		fmt.Fprintln(h.out, "acked", m.ID)
		h.out.Flush()
	}
	return nil
}

func groupStore(t *testing.T) (*Store, *storage.Config) {
	t.Helper()
	s := newTestStore(t)
	for _, a := range []NewAgent{{ID: "alice", Type: storage.AgentAI}, {ID: "bob", Type: storage.AgentAI}, {ID: "carol", Type: storage.AgentAI}, {ID: "dave", Type: storage.AgentHuman}} {
		if _, err := s.AddAgent(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := s.files.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	return s, cfg
}

// copiesOf counts, per message id, the chat logs holding it (each log at
// most once, or the test fails).
func copiesOf(t *testing.T, s *Store, agents ...string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, a := range agents {
		path, _ := s.files.ChatPath(a)
		recs, _, _, err := storage.ReadAll(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, r := range recs {
			m, err := decodeMessage(r.Data)
			if err != nil {
				t.Fatalf("%s: %v", a, err)
			}
			if seen[m.ID] {
				t.Errorf("%s holds %s twice", a, m.ID)
			}
			seen[m.ID] = true
			out[m.ID]++
		}
	}
	return out
}

// TestGroupSendKilled: a group send SIGKILLed at each instant inside it
// leaves, after doctor --repair, every copy (the sender's copy was
// written) or none (killed before it). A second repair changes nothing.
func TestGroupSendKilled(t *testing.T) {
	defer func(d time.Duration) { inFlight = d }(inFlight)
	inFlight = 0
	for _, stopAt := range []int{0, 1, 2, 3, 4, -1} {
		t.Run(fmt.Sprintf("at%d", stopAt), func(t *testing.T) {
			s, _ := groupStore(t)
			cmd := helperproc.Command(t, "group-send", s.files.ProjectDir(), strconv.Itoa(stopAt), "0")
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 64)
			n, _ := stdout.Read(buf) // "at N": the send is stopped there
			if got := strings.TrimSpace(string(buf[:n])); got != fmt.Sprintf("at %d", stopAt) {
				t.Fatalf("helper said %q", got)
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			before := copiesOf(t, s, "alice", "bob", "carol", "dave")
			if len(before) > 1 {
				t.Fatalf("copies before repair: %v", before)
			}
			if _, err := s.Doctor(context.Background(), true); err != nil {
				t.Fatal(err)
			}
			after := copiesOf(t, s, "alice", "bob", "carol", "dave")
			want := 4
			if stopAt == 0 {
				want = 0
			}
			total := 0
			for id, c := range after {
				if c != 4 {
					t.Errorf("after repair, %s is in %d of 4 chat logs (before: %v)", id, c, before)
				}
				total += c
			}
			if total != want {
				t.Errorf("after repair %d copies, want %d (before: %v)", total, want, before)
			}
			probs, err := s.Doctor(context.Background(), true)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range probs {
				if p.Repaired {
					t.Errorf("second repair repaired %v", p)
				}
			}
		})
	}
}

// TestGroupSendKilledAtRandom: group sends killed at random instants;
// after repair every message is in all four chat logs or none, and every
// acknowledged one in all four.
func TestGroupSendKilledAtRandom(t *testing.T) {
	defer func(d time.Duration) { inFlight = d }(inFlight)
	inFlight = 0
	s, _ := groupStore(t)
	acked := map[string]bool{}
	for round := 0; round < 6; round++ {
		runKillable(t, helperproc.Command(t, "group-send", s.files.ProjectDir(), "-1000", "0"), true, 60*time.Millisecond, func(l string) {
			if id, ok := strings.CutPrefix(l, "acked "); ok {
				acked[id] = true
			}
		})
	}
	if _, err := s.Doctor(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	after := copiesOf(t, s, "alice", "bob", "carol", "dave")
	for id, c := range after {
		if c != 4 {
			t.Errorf("%s is in %d of 4 chat logs", id, c)
		}
	}
	for id := range acked {
		if after[id] != 4 {
			t.Errorf("acknowledged %s is in %d of 4 chat logs", id, after[id])
		}
	}
	t.Logf("%d acknowledged, %d messages", len(acked), len(after))
}

// TestGroupSendRefusals: each bad target list gets its code, and nothing
// is written.
func TestGroupSendRefusals(t *testing.T) {
	s, cfg := groupStore(t)
	cfg.Groups = storage.Groups{"all": {"alice", "bob", "carol"}, "me": {"alice"}}
	many := make([]string, storage.MaxReceivers+1)
	for i := range many {
		many[i] = fmt.Sprintf("a%d", i)
	}
	for _, tc := range []struct {
		name string
		m    OutgoingMessage
		code string
	}{
		{"none", OutgoingMessage{}, storage.CodeAgentNotFound},
		{"two ways", OutgoingMessage{To: "bob", Receivers: []string{"carol"}}, storage.CodeTooManyTargets},
		{"list and group", OutgoingMessage{Group: "all", Receivers: []string{"carol"}}, storage.CodeTooManyTargets},
		{"empty list", OutgoingMessage{Receivers: []string{}}, storage.CodeAgentNotFound},
		{"self in list", OutgoingMessage{Receivers: []string{"bob", "alice"}}, storage.CodeCannotMessageSelf},
		{"duplicate", OutgoingMessage{Receivers: []string{"bob", "carol", "bob"}}, storage.CodeDuplicateReceiver},
		{"unknown", OutgoingMessage{Receivers: []string{"bob", "zed"}}, storage.CodeAgentNotFound},
		{"bad id", OutgoingMessage{Receivers: []string{"../x"}}, storage.CodeAgentNotFound},
		{"too many", OutgoingMessage{Receivers: many}, storage.CodeTooManyReceivers},
		{"no group", OutgoingMessage{Group: "nobody"}, storage.CodeGroupNotFound},
		{"only me", OutgoingMessage{Group: "me"}, storage.CodeCannotMessageSelf},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.m.From, tc.m.Content = "alice", "hi"
			_, err := s.Send(context.Background(), cfg, tc.m)
			var ce *storage.CodeError
			if !errors.As(err, &ce) || ce.Code != tc.code {
				t.Fatalf("err = %v, want code %s", err, tc.code)
			}
		})
	}
	if got := copiesOf(t, s, "alice", "bob", "carol", "dave"); len(got) != 0 {
		t.Errorf("refused sends wrote %v", got)
	}
}

// TestGroupSendByGroup: a group that contains the sender sends to the
// others; every copy names all receivers and the group; each receiver
// reads it as unread, the sender does not.
func TestGroupSendByGroup(t *testing.T) {
	s, cfg := groupStore(t)
	cfg.Groups = storage.Groups{"team": {"bob", "alice", "carol"}}
	ctx := context.Background()
	m, err := s.Send(ctx, cfg, OutgoingMessage{From: "alice", Group: "team", Content: "standup"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(m.ReceiverIDs, ",") != "bob,carol" || m.TargetGroup != "team" || m.ConversationID != "" {
		t.Errorf("sent %+v", m)
	}
	for _, a := range []string{"bob", "carol"} {
		got, _, err := s.Unread(ctx, a, 10, false)
		if err != nil || len(got) != 1 || got[0].ID != m.ID || strings.Join(got[0].ReceiverIDs, ",") != "bob,carol" {
			t.Errorf("%s unread = %+v, %v", a, got, err)
		}
	}
	if got, _, _ := s.Unread(ctx, "alice", 10, false); len(got) != 0 {
		t.Errorf("the sender reads its own broadcast: %+v", got)
	}
	if got := copiesOf(t, s, "alice", "bob", "carol", "dave"); got[m.ID] != 3 {
		t.Errorf("copies %v, want 3", got)
	}
}

// TestConfigGroups: [groups] is checked at load.
func TestConfigGroups(t *testing.T) {
	base := "[[agents]]\nid = \"a1\"\ntype = \"ai\"\n\n[[agents]]\nid = \"a2\"\ntype = \"ai\"\n\n[groups]\n"
	cfg, err := storage.ParseConfig("config.toml", []byte(base+"reviewers = [\"a1\", \"a2\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := cfg.Group("reviewers"); !ok || strings.Join(m, ",") != "a1,a2" {
		t.Errorf("reviewers = %v", m)
	}
	for _, tc := range []struct{ line, want string }{
		{"reviewers = []", "config.toml:10: group \"reviewers\" is empty"},
		{"reviewers = [\"a1\", \"ghost\"]", "config.toml:10: group \"reviewers\": member \"ghost\" is not a configured agent"},
		{"reviewers = [\"a1\", \"a1\"]", "config.toml:10: group \"reviewers\" names \"a1\" twice"},
		{"system = [\"a1\"]", "config.toml:10: group name \"system\" is invalid"},
		{"\"bad name\" = [\"a1\"]", "group name \"bad name\" is invalid"},
	} {
		_, err := storage.ParseConfig("config.toml", []byte(base+tc.line+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.line, err, tc.want)
		}
	}
}

// TestGroupTurnNotWrittenNotCounted: a turn that could not be written at
// all (the log of bob, who speaks next and whose copy is written first, is
// a symbolic link aipm refuses) is not counted: the sender sends it again,
// and the turn order stays where it was.
func TestGroupTurnNotWrittenNotCounted(t *testing.T) {
	s, cfg := groupStore(t)
	ctx := context.Background()
	c, _, err := s.Conversations().Start(ctx, cfg, NewConversation{From: "alice", Participants: []string{"bob", "carol"}})
	if err != nil {
		t.Fatal(err)
	}
	path, _ := s.files.ChatPath("bob")
	os.MkdirAll(strings.TrimSuffix(path, "/chat.jsonl"), 0o755)
	target := path + ".elsewhere"
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Conversations().Send(ctx, cfg, "alice", c.ID, "first turn"); err == nil {
		t.Fatal("a turn into a symbolic link was written")
	}
	if got, _ := s.conversation(ctx, cfg, c.ID); got.Turns != 0 {
		t.Fatalf("the unwritten turn was counted: %d turns", got.Turns)
	}
	os.Remove(path)
	if _, after, err := s.Conversations().Send(ctx, cfg, "alice", c.ID, "first turn"); err != nil || after.Turns != 1 {
		t.Fatalf("the turn sent again: %v, %d turns", err, after.Turns)
	}
	if _, _, err := s.Conversations().Send(ctx, cfg, "bob", c.ID, "second turn"); err != nil {
		t.Fatalf("bob's turn after it: %v", err)
	}
}

// TestGroupTurnReachesTheNextParty: a group turn counts only once the copy
// of the party whose turn it makes it is written (that copy is written
// first): when it cannot be, nothing is written and the turn stays the
// sender's; when another receiver's cannot (sent_partly), the turn counts
// and the next party has the message it answers, the missing copy coming
// with doctor --repair. (A chat log aipm refuses, a symbolic link, fails
// one copy.)
func TestGroupTurnReachesTheNextParty(t *testing.T) {
	defer func(d time.Duration) { inFlight = d }(inFlight)
	inFlight = 0
	for _, tc := range []struct {
		broken     string
		partly     bool
		turns      int
		holders    int
		bobHasIt   bool
		repairedTo int
	}{
		{broken: "bob", turns: 0, holders: 0},                                                // bob speaks next
		{broken: "carol", partly: true, turns: 1, holders: 2, bobHasIt: true, repairedTo: 3}, // carol after bob
		{broken: "alice", partly: true, turns: 1, holders: 1, bobHasIt: true, repairedTo: 3}, // the sender's own copy
	} {
		t.Run(tc.broken, func(t *testing.T) {
			s, cfg := groupStore(t)
			ctx := context.Background()
			c, _, err := s.Conversations().Start(ctx, cfg, NewConversation{From: "alice", Participants: []string{"bob", "carol"}})
			if err != nil {
				t.Fatal(err)
			}
			path, _ := s.files.ChatPath(tc.broken)
			os.MkdirAll(filepath.Dir(path), 0o755)
			if err := os.WriteFile(path+".elsewhere", nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(path+".elsewhere", path); err != nil {
				t.Fatal(err)
			}
			m, after, err := s.Conversations().Send(ctx, cfg, "alice", c.ID, "first turn")
			var ce *storage.CodeError
			if partly := errors.As(err, &ce) && ce.Code == storage.CodeSentPartly; err == nil || partly != tc.partly {
				t.Fatalf("the send: %v; want sent_partly %v", err, tc.partly)
			}
			os.Remove(path)
			got, _ := s.conversation(ctx, cfg, c.ID)
			if got.Turns != tc.turns {
				t.Fatalf("%d turns counted, want %d (after: %d)", got.Turns, tc.turns, after.Turns)
			}
			if n := copiesOf(t, s, "alice", "bob", "carol")[m.ID]; n != tc.holders {
				t.Fatalf("%d copies written, want %d", n, tc.holders)
			}
			msgs, _, err := s.Unread(ctx, "bob", 0, true)
			if err != nil || (len(msgs) == 1) != tc.bobHasIt {
				t.Fatalf("bob, whose turn it is if it counted, has %d unread (%v)", len(msgs), err)
			}
			if tc.turns == 1 && got.NextSpeaker() != "bob" {
				t.Fatalf("the turn went to %s", got.NextSpeaker())
			}
			if tc.turns == 0 {
				if _, after, err := s.Conversations().Send(ctx, cfg, "alice", c.ID, "first turn"); err != nil || after.Turns != 1 {
					t.Fatalf("the turn sent again: %v, %d turns", err, after.Turns)
				}
				return
			}
			if _, err := s.Doctor(ctx, true); err != nil {
				t.Fatal(err)
			}
			if n := copiesOf(t, s, "alice", "bob", "carol")[m.ID]; n != tc.repairedTo {
				t.Fatalf("%d copies after doctor --repair, want %d", n, tc.repairedTo)
			}
		})
	}
}
