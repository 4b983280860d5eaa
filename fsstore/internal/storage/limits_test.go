package storage

import (
	"errors"
	"strings"
	"testing"
)

// Each free-text field takes exactly its limit in characters (é is two
// bytes) and refuses one more with <field>_too_long; bytes that are not
// UTF-8 are content_invalid.
func TestCheckText(t *testing.T) {
	for field, limit := range TextLimits {
		t.Run(field, func(t *testing.T) {
			if err := CheckText(field, strings.Repeat("é", limit)); err != nil {
				t.Errorf("%d characters: %v", limit, err)
			}
			var ce *CodeError
			err := CheckText(field, strings.Repeat("é", limit+1))
			if !errors.As(err, &ce) || ce.Code != field+"_too_long" || !strings.Contains(ce.Msg, "the limit is") {
				t.Errorf("%d characters: %v", limit+1, err)
			}
			err = CheckText(field, "ok \xff")
			if !errors.As(err, &ce) || ce.Code != "content_invalid" {
				t.Errorf("invalid UTF-8: %v", err)
			}
		})
	}
}

// An error repeats a huge value only in part, cut on a character boundary.
func TestClip(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"short", "short"},
		{strings.Repeat("a", 10), strings.Repeat("a", 10)},
		{strings.Repeat("a", 11), strings.Repeat("a", 10) + "... (11 bytes)"},
		{strings.Repeat("é", 6), strings.Repeat("é", 5) + "... (12 bytes)"},
		{"aéééééé", "aéééé... (13 bytes)"},
	} {
		if got := Clip(tc.in, 10); got != tc.want {
			t.Errorf("Clip(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if err := CheckID(PrefixTask, "tsk_"+strings.Repeat("A", 10<<20)); len(err.Error()) > 300 {
		t.Errorf("a 10 MB id is echoed in %d bytes", len(err.Error()))
	}
}
