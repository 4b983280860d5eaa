package mcpserver

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// checkArguments refuses arguments whose strings are not valid UTF-8,
// before the JSON decoder would quietly replace the bad bytes with U+FFFD
// and a tool would store the damaged text. A lone surrogate escape
// (\ud800) is invalid for the same reason.
func checkArguments(raw json.RawMessage) error {
	if !utf8.Valid(raw) || hasLoneSurrogate(raw) {
		return toolErr("content_invalid", "the arguments are not valid UTF-8 (or hold a lone \\u surrogate escape): send text only, encoded as UTF-8")
	}
	return nil
}

// hasLoneSurrogate reports whether a JSON text holds a \uD800-\uDFFF escape
// that is not half of a high-low pair.
func hasLoneSurrogate(raw []byte) bool {
	for i := 0; i+6 <= len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if raw[i+1] != 'u' {
			i++ // an escaped character, perhaps a backslash: skip it
			continue
		}
		r, ok := hex4(raw[i+2 : i+6])
		switch {
		case !ok || r < 0xD800 || r > 0xDFFF:
		case r >= 0xDC00:
			return true // a low half with no high half before it
		default:
			if i+12 > len(raw) || raw[i+6] != '\\' || raw[i+7] != 'u' {
				return true
			}
			if lo, ok := hex4(raw[i+8 : i+12]); !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 6 // the pair's low half is fine
		}
		i += 5
	}
	return false
}

func hex4(b []byte) (rune, bool) {
	var r rune
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// argsDescriber is an In type that describes some of its fields itself,
// in words built from the rule that decides them (fsstore's lists), where
// a description tag could only restate the rule by hand.
type argsDescriber interface {
	describeArgs(properties map[string]*jsonschema.Schema)
}

// inputSchema is In's inferred schema, tidied, with the allowed values of
// its enum fields listed, so that a model sees them and the SDK refuses any
// other value, the empty string too, and the descriptions In gives its
// fields (argsDescriber).
func inputSchema[In any](e enums) *jsonschema.Schema {
	schema, err := jsonschema.For[In](nil)
	if err != nil {
		panic(err)
	}
	tidy(schema)
	if d, ok := any(*new(In)).(argsDescriber); ok {
		d.describeArgs(schema.Properties)
	}
	for field, allowed := range e {
		p := schema.Properties[field]
		if p == nil {
			panic("inputSchema: no field " + field)
		}
		for _, v := range allowed {
			p.Enum = append(p.Enum, v)
		}
	}
	return schema
}
