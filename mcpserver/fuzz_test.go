package mcpserver

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzCheckArguments: a tool call's arguments as a client may send them.
// What checkArguments accepts is valid UTF-8 and, when it is JSON, still
// accepted after a decode and re-encode.
func FuzzCheckArguments(f *testing.F) {
	f.Add([]byte(`{"to":"coder","content":"hi \ud83d\ude00"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if checkArguments(raw) != nil {
			return
		}
		if !utf8.Valid(raw) {
			t.Fatalf("accepted invalid UTF-8 %q", raw)
		}
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return
		}
		again, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("accepted %q, cannot encode it: %v", raw, err)
		}
		if err := checkArguments(again); err != nil {
			t.Fatalf("accepted %q, refused its re-encoding %q: %v", raw, again, err)
		}
	})
}
