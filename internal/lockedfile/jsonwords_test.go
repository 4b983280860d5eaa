package lockedfile

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestJSONWords: what is wrong with a JSON line or document, and where, in
// words for the person who edits it; none of the decoder's own.
func TestJSONWords(t *testing.T) {
	type doc struct {
		ID    string    `json:"id"`
		Count uint      `json:"count"`
		Tags  []string  `json:"tags"`
		At    time.Time `json:"at"`
	}
	for _, tc := range []struct {
		name, data, want string
		line             int
	}{
		{"bad byte", `{"id": x}`, "unexpected 'x' at column 8", 1},
		{"bad byte later", "{\n  \"id\": \"a\",\n  \"count\" 1\n}", "unexpected '1' at column 11", 3},
		{"cut off", `{"id": "a`, "it ends too early (a closing quote, } or ] is missing)", 1},
		{"cut off after a value", "{\"id\": \"a\",\n", "it ends too early (a closing quote, } or ] is missing)", 1},
		{"closing too soon", `{"tags": ["a",}`, "unexpected '}' at column 15", 1},
		{"more after", `{"id": "a"} x`, "unexpected 'x' at column 13", 1},
		{"newline in a string", "{\"id\": \"a\n\"}", "unexpected end of line at column 10", 1},
		{"number for a string", `{"id": 7}`, "id must be a string, not a number", 1},
		{"negative count", `{"count": -1}`, "count must be a whole number, 0 or more, not the number -1", 1},
		{"string for a list", "{\n\"tags\": \"a\"}", "tags must be a list, not a string", 2},
		{"list for the document", `[1]`, "this value must be an object, not a list", 1},
		{"bad time", `{"at": "yesterday"}`, `"yesterday" is not a time in RFC 3339 form, such as 2026-01-02T15:04:05Z`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d doc
			err := json.Unmarshal([]byte(tc.data), &d)
			if err == nil {
				t.Fatal("no error")
			}
			got := JSONWords([]byte(tc.data), err)
			if got != tc.want {
				t.Errorf("JSONWords = %q\n      want %q (decoder: %v)", got, tc.want, err)
			}
			for _, lib := range []string{"invalid character", "Go ", "json:", "cannot unmarshal", "parsing time", "unexpected end of JSON"} {
				if strings.Contains(got, lib) {
					t.Errorf("JSONWords = %q: the decoder's words %q", got, lib)
				}
			}
			if line := JSONLine([]byte(tc.data), err); line != tc.line {
				t.Errorf("JSONLine = %d, want %d", line, tc.line)
			}
		})
	}
}
