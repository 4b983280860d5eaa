package sim

import (
	"fmt"
	"testing"
)

func TestLastSound(t *testing.T) {
	for _, c := range []struct{ word, want string }{
		{"しりとり", "り"}, {"じしょ", "よ"}, {"ろっかー", "か"}, {"らっこ", "こ"}, {"Apple", "e"}, {"tiger.", "r"}, {"", ""},
	} {
		if got := lastSound(c.word); got != c.want {
			t.Errorf("lastSound(%q) = %q, want %q", c.word, got, c.want)
		}
	}
}

// TestGames plays both languages with nextWord alone, for both players,
// as far as the words go: every move follows the one before, no word
// comes twice, none ends in ん, and the game lasts.
func TestGames(t *testing.T) {
	for _, first := range []string{"しりとり", "apple"} {
		used := map[string]bool{first: true}
		prev, moves := first, 0
		for {
			next := nextWord(prev, used)
			if next == "" {
				break
			}
			if !validMove(prev, next) || used[next] || isKana(next) != isKana(first) {
				t.Fatalf("%s then %s: not a valid move (used %v)", prev, next, used[next])
			}
			used[next] = true
			prev = next
			moves++
		}
		if moves < 20 {
			t.Errorf("the game from %s lasted %d moves, want at least 20", first, moves)
		}
	}
	if validMove("りんご", "ごはん") {
		t.Error("a word ending in ん was accepted")
	}
}

func TestShiritoriPlan(t *testing.T) {
	for _, tc := range []struct {
		request string
		turns   int
		first   string
	}{
		{"Please play shiritori with reviewer.", 8, "しりとり"},
		{"Please play shiritori with reviewer, 10 turns.", 10, "しりとり"},
		{"shiritori with reviewer in English", 8, "apple"},
		{"6-round shiritori with reviewer, start with りんご", 12, "りんご"},
		{"3 round shiritori, start with tiger.", 6, "tiger"},
		{"6-round word chain with reviewer", 12, "apple"},
		{"6-round word chain with reviewer, start with lemon", 12, "lemon"},
		{"shiritori with reviewer, start with ごりら 4 turns", 4, "ごりら"},
	} {
		turns, first := shiritoriPlan(tc.request)
		if turns != tc.turns || first != tc.first {
			t.Errorf("shiritoriPlan(%q) = %d, %q; want %d, %q", tc.request, turns, first, tc.turns, tc.first)
		}
	}
}

func TestDelegateLine(t *testing.T) {
	for _, tc := range []struct {
		desc            string
		target, purpose string
	}{
		{"delegate: reviewer: 6-round shiritori with reviewer, start with りんご", "reviewer", "6-round shiritori with reviewer, start with りんご"},
		{"Ask around.\n  delegate: lead : is the release on Friday?\nThen write it down.", "lead", "is the release on Friday?"},
		{"sim-steps=3", "", ""},
		{"please delegate: reviewer: x", "", ""}, // only at the start of a line
	} {
		m := delegateRE().FindStringSubmatch(tc.desc)
		var target, purpose string
		if m != nil {
			target, purpose = m[1], m[2]
		}
		if target != tc.target || purpose != tc.purpose {
			t.Errorf("%q: delegate %q: %q; want %q: %q", tc.desc, target, purpose, tc.target, tc.purpose)
		}
	}
}

func TestGroupTargets(t *testing.T) {
	for in, want := range map[string]string{
		"9-turn word chain with reviewer and tester, start with apple": "[reviewer tester]",
		"shiritori with a, b and c":                                    "[a b c]",
		"word chain with reviewer, start with apple":                   "[]",
	} {
		if got := fmt.Sprint(groupTargets(in)); got != want {
			t.Errorf("groupTargets(%q) = %s, want %s", in, got, want)
		}
	}
}
