package sim

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Shiritori: each word starts with the last sound of the one before; no
// word twice; a word ending in ん loses (so none of ours does).
var (
	kanaWords = strings.Fields(`しりとり りんご ごりら らっぱ ぱんだ だるま まくら らくだ だんご ごま まめ めだか かめ めがね ねこ
		こま まど どんぐり りす すいか かさ さくら ことり りか かに にわとり りゅう うさぎ ぎんこう うま まつり いか かき きつね
		ねずみ みみ みず すずめ もも もり りそう うし しか からす すし しお おに いぬ ぬいぐるみ みそ そら とら らっこ こい いす
		すな なす すみれ れいぞうこ こあら あり くま まり たぬき きのこ こけし しまうま まぐろ ろうそく くつ つくえ えだ つばめ
		めじろ ろば ばった たこ こども もぐら らじお おかし しろ とけい いちご ごぼう うちわ わに にじ じしょ よる るす すいとう
		うめ めいろ ろくろ ろっかー あさがお おりがみ みかづき きって てがみ みなと とまと とり りぼん`)
	englishWords = strings.Fields(`apple egg giraffe elephant tiger rabbit tomato orange eagle lemon night table east train
		nose echo owl lion notebook kite ear river rain nest tree yellow window water rose earth hat top pen name moon nut tent
		ice engine eel lamp puppy yak kettle dog goat tulip piano octopus sun nail lake kiwi idea anchor robot tea
		arrow wolf fox xylophone eye yarn needle garden nectar radio ocean island desk king grape`)
)

// small kana end a word as their full-size sound.
var bigKana = map[rune]rune{'ゃ': 'や', 'ゅ': 'ゆ', 'ょ': 'よ', 'ぁ': 'あ', 'ぃ': 'い', 'ぅ': 'う', 'ぇ': 'え', 'ぉ': 'お', 'っ': 'つ'}

// lastSound is the sound the next word must start with ("" if none).
func lastSound(word string) string {
	word = strings.ToLower(strings.TrimSpace(word))
	word = strings.TrimRightFunc(word, func(r rune) bool { return unicode.IsPunct(r) || r == 'ー' })
	r, _ := utf8.DecodeLastRuneInString(word)
	if r == utf8.RuneError {
		return ""
	}
	if big, ok := bigKana[r]; ok {
		r = big
	}
	return string(r)
}

// isKana says whether word is written in kana (the Japanese game).
func isKana(word string) bool {
	r, _ := utf8.DecodeRuneInString(strings.TrimSpace(word))
	return unicode.In(r, unicode.Hiragana, unicode.Katakana)
}

// nextWord is an unused word that follows prev in prev's language, or "".
func nextWord(prev string, used map[string]bool) string {
	words := englishWords
	if isKana(prev) {
		words = kanaWords
	}
	want := lastSound(prev)
	for _, w := range words {
		if strings.HasPrefix(w, want) && !used[w] && !strings.HasSuffix(w, "ん") {
			return w
		}
	}
	return ""
}

// validMove says whether word correctly follows prev.
func validMove(prev, word string) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(word)), lastSound(prev)) && !strings.HasSuffix(strings.TrimSpace(word), "ん")
}
