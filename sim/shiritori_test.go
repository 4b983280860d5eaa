package sim

import "testing"

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
