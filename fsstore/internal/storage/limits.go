package storage

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Limits on every free-text field, in characters (not bytes), checked
// before anything is written (DESIGN section 14). The README lists them.
const (
	MaxContent     = 4000  // a chat message
	MaxTitle       = 200   // a task's title
	MaxDescription = 20000 // a task's description
	MaxReason      = 2000  // why a status changed
	maxSummary     = 8000  // a report on finished work
	MaxPurpose     = 500   // what a conversation or delegation is for
	MaxContext     = 8000  // background handed to another session
	MaxResult      = 8000  // a delegation's result
	maxPasskey     = 256   // bytes; issued passkeys are far shorter
)

// TextLimits maps each free-text field to its limit, for documentation and
// for the one check below.
var TextLimits = map[string]int{
	"content":     MaxContent,
	"title":       MaxTitle,
	"description": MaxDescription,
	"reason":      MaxReason,
	"summary":     maxSummary,
	"purpose":     MaxPurpose,
	"context":     MaxContext,
	"result":      MaxResult,
}

// CheckText is the one check of a free-text field: valid UTF-8 and at
// most its limit. The codes are the seeds' (content_too_long) generalised:
// <field>_too_long, and content_invalid for bytes that are not UTF-8.
func CheckText(field, value string) error {
	limit, ok := TextLimits[field]
	if !ok {
		panic("fsstore: no limit for text field " + field)
	}
	if !utf8.ValidString(value) {
		return CodeErr(codeContentInvalid, "%s is not valid UTF-8: send text only", field)
	}
	if len(value) > limit { // cheap first: a rune is at least one byte
		if n := utf8.RuneCountInString(value); n > limit {
			return CodeErr(field+"_too_long", "%s has %d characters; the limit is %d: %s", field, n, limit, shorten[field])
		}
	}
	return nil
}

// shorten says what to do with a field that is too long.
var shorten = map[string]string{
	"content":     "split it and send each part as its own message",
	"title":       "keep the title short and put details in the description",
	"description": "shorten it, or put the details in a file of the project and name the file",
	"reason":      "say it in fewer words",
	"summary":     "shorten it, or put the details in a file of the project and name the file",
	"purpose":     "say it in fewer words",
	"context":     "shorten it, or put the details in a file of the project and name the file",
	"result":      "shorten it, or put the details in a file of the project and name the file",
}

// CheckEnum reports whether value is one of allowed; the empty string never
// is. field names the argument in the error.
func CheckEnum(field, value string, allowed []string) error {
	if !slices.Contains(allowed, value) {
		return CodeErr("invalid_"+field, "%s %q is invalid: use one of %s", field, Clip(value, MaxEchoedID), strings.Join(allowed, ", "))
	}
	return nil
}

// CheckPasskeyArg refuses a passkey that cannot be one, before any hashing.
func CheckPasskeyArg(passkey string) error {
	if len(passkey) > maxPasskey || !utf8.ValidString(passkey) {
		return fmt.Errorf("the passkey has %d bytes and cannot be right: use the passkey printed by aipm agent add: %w", len(passkey), ErrBadPasskey)
	}
	return nil
}
