package fsstore

import (
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
