package fsstore

import (
	"aipm/fsstore/internal/storage"
	"aipm/internal/helperproc"
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// newConvStore is a project with three AI agents (a, b, c) and a human (h).
func newConvStore(t *testing.T) (*Store, *storage.Config) {
	t.Helper()
	s := newTestStore(t)
	for _, a := range []NewAgent{{ID: "a", Type: storage.AgentAI}, {ID: "b", Type: storage.AgentAI}, {ID: "c", Type: storage.AgentAI}, {ID: "h", Type: storage.AgentHuman}} {
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

func TestConversationTransitionTable(t *testing.T) {
	states := []string{ConvPending, ConvActive, ConvTerminating, ConvEnded, ConvExpired}
	allowed := map[string]bool{
		"pending>active": true, "pending>expired": true, "pending>terminating": true,
		"active>terminating": true, "terminating>ended": true,
	}
	for _, from := range states {
		for _, to := range states {
			c := Conversation{ID: "cnv_x", State: from}
			err := c.move(to, "a", "why", time.Now())
			if ok := err == nil; ok != allowed[from+">"+to] {
				t.Errorf("%s -> %s: err=%v, allowed=%v", from, to, err, allowed[from+">"+to])
			}
			if err == nil && (c.State != to || len(c.History) != 1 || c.History[0].By != "a") {
				t.Errorf("%s -> %s: %+v", from, to, c)
			}
		}
	}
}

// Each party is told once; after both it is ended. The ender being told
// never hides the news from the other.
func TestConversationTold(t *testing.T) {
	now := time.Now()
	c := Conversation{ID: "cnv_x", Initiator: "a", Participant: "b", State: ConvActive}
	c.move(ConvTerminating, "a", ReasonInitiatorEnded, now)
	if !c.owesNews("a") || !c.owesNews("b") || c.owesNews("c") {
		t.Fatal("both parties, and only they, are owed the news")
	}
	c.tell("a", now)
	c.tell("a", now)
	if c.State != ConvTerminating || c.owesNews("a") || !c.owesNews("b") || len(c.Told) != 1 {
		t.Fatalf("after telling the ender: %+v", c)
	}
	c.tell("b", now)
	if c.State != ConvEnded || !c.closed() {
		t.Fatalf("after telling both: %+v", c)
	}
	x := Conversation{ID: "cnv_y", Initiator: "a", Participant: "b", State: ConvPending}
	x.move(ConvExpired, storage.SystemSender, reasonNeverAccepted, now)
	if !x.owesNews("a") || x.owesNews("b") || x.closed() {
		t.Fatalf("expired: only the initiator is owed the news: %+v", x)
	}
	x.tell("a", now)
	if !x.closed() || x.State != ConvExpired {
		t.Fatalf("expired and told: %+v", x)
	}
}

// The index is a cache of which conversations are open: deleted or
// damaged, it is rebuilt from the documents, and uniqueness still holds.
func TestConversationIndexRebuilt(t *testing.T) {
	for _, damage := range []func(path string) error{
		os.Remove,
		func(path string) error { return os.WriteFile(path, []byte("{\"pairs\": [1,"), 0o644) },
	} {
		testIndexRebuilt(t, damage)
	}
}

func testIndexRebuilt(t *testing.T, damage func(string) error) {
	s, cfg := newConvStore(t)
	ctx := context.Background()
	c, _, err := s.Conversations().Start(ctx, cfg, NewConversation{From: "a", To: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if err := damage(s.convIndexPath()); err != nil {
		t.Fatal(err)
	}
	var ce *storage.CodeError
	if _, _, err := s.Conversations().Start(ctx, cfg, NewConversation{From: "b", To: "a"}); !errors.As(err, &ce) || ce.Code != "conversation_already_active" {
		t.Fatalf("b->a with the index gone: %v", err)
	}
	open, err := s.Conversations().List(ctx, cfg, false)
	if err != nil || len(open) != 1 || open[0].ID != c.ID {
		t.Fatalf("open conversations: %+v %v", open, err)
	}
}

// Processes start a->b and b->a at the same instant, round after round:
// exactly one of each pair succeeds. CONVERSATION_RACES sets the rounds
// (default 100).
func TestStartConversationRaceProcesses(t *testing.T) {
	rounds := 100
	if n, err := strconv.Atoi(os.Getenv("CONVERSATION_RACES")); err == nil {
		rounds = n
	}
	s, cfg := newConvStore(t)
	ctx := context.Background()
	var outs []*bufio.Scanner
	for _, pair := range []string{"a:b", "b:a"} {
		cmd := helperproc.Command(t, "start-conversation", s.files.ProjectDir(), pair, strconv.Itoa(rounds))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		outs = append(outs, bufio.NewScanner(stdout))
	}
	for i := 0; i < rounds; i++ {
		if err := os.WriteFile(filepath.Join(s.files.ProjectDir(), fmt.Sprintf("go-%d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		var started []string
		for _, out := range outs {
			if !out.Scan() {
				t.Fatalf("round %d: a helper stopped: %v", i, out.Err())
			}
			line := out.Text()
			switch {
			case strings.HasPrefix(line, "started "):
				started = append(started, strings.TrimPrefix(line, "started "))
			case line != "refused conversation_already_active":
				t.Fatalf("round %d: %s", i, line)
			}
		}
		if len(started) != 1 {
			t.Fatalf("round %d: %d conversations started, want exactly 1", i, len(started))
		}
		c, err := s.conversation(ctx, cfg, started[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Conversations().End(ctx, cfg, c.Initiator, c.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// A process that keeps the conversations' index between calls
// (keptConvIndex) sees every conversation another process starts and
// ends, with the index in place, gone, or damaged.
func TestConversationIndexKept(t *testing.T) {
	s, cfg := newConvStore(t)
	other, err := Open(s.files.ProjectDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	open := func(step string, want ...string) {
		t.Helper()
		for range 2 { // the second read is the kept one
			cs, err := s.conversationsOf(ctx, cfg, "a")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range cs {
				if c.Open() {
					got = append(got, c.Other("a"))
				}
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("%s: a's open conversations are with %v, want %v", step, got, want)
			}
		}
	}
	open("none yet")
	ab, _, err := other.Conversations().Start(ctx, cfg, NewConversation{From: "a", To: "b"})
	if err != nil {
		t.Fatal(err)
	}
	open("started elsewhere", "b")
	if err := os.Remove(s.convIndexPath()); err != nil {
		t.Fatal(err)
	}
	open("index removed", "b")
	if _, _, err := other.Conversations().Start(ctx, cfg, NewConversation{From: "c", To: "a"}); err != nil {
		t.Fatal(err)
	}
	open("another, the index written back", "b", "c")
	if err := os.WriteFile(s.convIndexPath(), []byte(`{"pairs": [1,`), 0o644); err != nil {
		t.Fatal(err)
	}
	open("index damaged", "b", "c")
	if _, err := other.Conversations().End(ctx, cfg, "a", ab.ID); err != nil {
		t.Fatal(err)
	}
	open("one ended elsewhere", "c")
}

// A new conversation among parties who talked before names the last
// conversation among them that ended (seed 001), whoever started either,
// also after the index was lost; the first one among them names none.
func TestConversationNamesThePrevious(t *testing.T) {
	s, cfg := newConvStore(t)
	ctx := context.Background()
	start := func(from, to, purpose string) Conversation {
		t.Helper()
		c, _, err := s.Conversations().Start(ctx, cfg, NewConversation{From: from, To: to, Purpose: purpose})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	end := func(c Conversation) {
		t.Helper()
		if _, err := s.Conversations().End(ctx, cfg, c.Initiator, c.ID); err != nil {
			t.Fatal(err)
		}
	}
	first := start("a", "b", "the parser")
	if first.Previous != nil {
		t.Errorf("the first conversation names %+v", first.Previous)
	}
	end(first)
	second := start("b", "a", "the lexer")
	if p := second.Previous; p == nil || p.ID != first.ID || p.Purpose != "the parser" {
		t.Errorf("second names %+v, want %s about the parser", p, first.ID)
	}
	end(second)
	if err := os.Remove(s.convIndexPath()); err != nil {
		t.Fatal(err)
	}
	third := start("a", "b", "")
	if p := third.Previous; p == nil || p.ID != second.ID {
		t.Errorf("after the index was lost, third names %+v, want %s", p, second.ID)
	}
}
