package mcpserver

import (
	"bytes"
	"encoding/json"

	"github.com/tidwall/gjson"
)

// clientArguments are arguments an MCP client adds on its own to every
// tool's schema and passes in every call, for itself rather than for the
// tool, by name and the JSON type the client gives them: Gemini CLI's
// wait_for_previous, a boolean asking it to run the call after the one
// before it. aipm's input schemas say additionalProperties: false, so
// that a model's misspelt argument is refused, naming it; a client's own
// argument is dropped before that check instead (withoutClientArguments),
// and one of another type is refused like any other.
// TestNoToolDeclaresClientArguments holds that no tool of aipm's declares
// an argument of these names.
var clientArguments = map[string]func(gjson.Result) bool{
	"wait_for_previous": gjson.Result.IsBool,
}

// withoutClientArguments is the call's arguments without the clients'
// own (clientArguments). Arguments that name none are returned as they
// are, without being decoded.
func withoutClientArguments(raw json.RawMessage) json.RawMessage {
	named := false
	for name := range clientArguments {
		named = named || bytes.Contains(raw, []byte(name))
	}
	if !named {
		return raw
	}
	args := gjson.ParseBytes(raw)
	if !args.IsObject() {
		return raw
	}
	kept := make(map[string]json.RawMessage)
	dropped := false
	args.ForEach(func(key, value gjson.Result) bool {
		if isType, ok := clientArguments[key.Str]; ok && isType(value) {
			dropped = true
			return true
		}
		kept[key.Str] = json.RawMessage(value.Raw)
		return true
	})
	if !dropped {
		return raw
	}
	out, err := json.Marshal(kept)
	if err != nil {
		return raw // the values are gjson's raw JSON: cannot fail
	}
	return out
}
