package storage

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

func TestNewIDSortableAndUnique(t *testing.T) {
	prev := ""
	seen := map[string]bool{}
	for i := 0; i < 10000; i++ {
		id := NewID(PrefixMessage)
		if err := CheckID(PrefixMessage, id); err != nil {
			t.Fatal(err)
		}
		if id <= prev || seen[id] {
			t.Fatalf("id %s after %s: not increasing", id, prev)
		}
		seen[id], prev = true, id
	}
}

func TestCheckIDs(t *testing.T) {
	good := NewID(PrefixTask)
	for _, tc := range []struct {
		prefix, id string
		ok         bool
	}{
		{PrefixTask, good, true},
		{PrefixMessage, good, false},
		{PrefixTask, "tsk_../../etc", false},
		{PrefixTask, strings.ToLower(good), false},
		{PrefixTask, good + "0", false},
		{PrefixTask, "", false},
	} {
		if err := CheckID(tc.prefix, tc.id); (err == nil) != tc.ok {
			t.Errorf("CheckID(%q, %q) = %v, want ok=%v", tc.prefix, tc.id, err, tc.ok)
		}
	}
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"alice", true}, {"A-1_b", true}, {strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false}, {"", false}, {"-a", false}, {"_a", false},
		{"a/b", false}, {"..", false}, {"a.b", false}, {"system", false}, {"ä", false},
	} {
		if err := CheckAgentID(tc.id); (err == nil) != tc.ok {
			t.Errorf("CheckAgentID(%q) = %v, want ok=%v", tc.id, err, tc.ok)
		}
	}
}

// TestFormsMatchTheirPatterns: the hand-written checks of ids.go accept
// exactly what their regular expressions accept, over every string of up
// to three characters from an alphabet that straddles each class boundary,
// over the boundary lengths, and over random strings.
func TestFormsMatchTheirPatterns(t *testing.T) {
	forms := []struct {
		pattern string
		check   func(string) bool
	}{
		{`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`, isAgentID},
		{`^[0-7][0-9A-HJKMNP-TV-Z]{25}$`, isIDBody},
		{`^[0-9A-HJKMNP-TV-Z]*$`, IsCrockford},
		{`^(task|chat)$`, func(p string) bool { return CheckPurpose(p) == nil }},
	}
	// Each class's edges and their neighbours, some multi-byte text, a
	// newline ($ must not match before one) and a NUL.
	alphabet := []string{"0", "7", "8", "9", "/", ":", "@", "A", "H", "I", "J", "K", "L", "M", "N", "O", "P", "T", "U", "V", "Z", "[", "`", "a", "z", "{", "_", "-", ".", "\n", "\x00", "é", "\xff", "k", "c"}
	var inputs []string
	var grow func(prefix string, depth int)
	grow = func(prefix string, depth int) {
		inputs = append(inputs, prefix)
		if depth == 0 {
			return
		}
		for _, c := range alphabet {
			grow(prefix+c, depth-1)
		}
	}
	grow("", 3)
	good := NewID(PrefixTask)[len(PrefixTask):]
	for n := 24; n <= 66; n++ {
		inputs = append(inputs, strings.Repeat("a", n), "a"+strings.Repeat("-", n-1), strings.Repeat("Z", n))
	}
	inputs = append(inputs, good, strings.ToLower(good), "8"+good[1:], good[:25]+"U", good+"\n", "task", "chat", "Task", "tasks", " chat")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, rng.IntN(70))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))][0]
		}
		inputs = append(inputs, string(b))
	}
	for _, f := range forms {
		re := regexp.MustCompile(f.pattern)
		for _, in := range inputs {
			if got, want := f.check(in), re.MatchString(in); got != want {
				t.Errorf("%s: check(%q) = %v, the pattern says %v", f.pattern, in, got, want)
			}
		}
	}
}
