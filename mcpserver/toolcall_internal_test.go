package mcpserver

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// toolShapes returns every tool's input schema, resolved, with its fast
// check shape.
func toolShapes(t testing.TB) map[string]struct {
	resolved *jsonschema.Resolved
	shape    *objectShape
} {
	t.Helper()
	shapes := map[string]struct {
		resolved *jsonschema.Resolved
		shape    *objectShape
	}{}
	for _, tool := range tools() {
		in, _ := servedSchemas(tool.tool.Name)
		var schema jsonschema.Schema
		if err := json.Unmarshal(in, &schema); err != nil {
			t.Fatalf("%s: %v", tool.tool.Name, err)
		}
		resolved, err := schema.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: %v", tool.tool.Name, err)
		}
		shapes[tool.tool.Name] = struct {
			resolved *jsonschema.Resolved
			shape    *objectShape
		}{resolved, shapeOf(in)}
	}
	return shapes
}

// TestEveryToolHasAFastCheck: every tool's input schema has a shape, so
// that no tool's calls all take the slow path unnoticed.
func TestEveryToolHasAFastCheck(t *testing.T) {
	for name, s := range toolShapes(t) {
		if s.shape == nil {
			t.Errorf("%s: its input schema has no fast check shape: teach shapeOf its keywords, or accept that its calls take the slow path", name)
		}
	}
}

// TestFastCheckIsSound: what the fast check admits, the schema accepts,
// over argument sets made at random from each tool's properties, keys it
// does not have (one differing only in case), and values of every kind,
// numbers written every way, keys given twice and escaped keys.
func TestFastCheckIsSound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	values := []string{
		`"x"`, `""`, `"todo"`, `"done"`, `"success"`, `"nope"`, `"\u00e9"`, `"a\"b"`,
		`0`, `1`, `-1`, `-0`, `01`, `1.0`, `1.5`, `1e3`, `1E0`, `123456789012345`, `1234567890123456`, `99999999999999999999`, `-9223372036854775809`,
		`true`, `false`, `null`, `[]`, `["x"]`, `{}`, `{"a":1}`,
	}
	admitted, checked := 0, 0
	for name, s := range toolShapes(t) {
		var keys []string
		for k := range s.shape.props {
			keys = append(keys, k, `"`+k+`"`) // the second: written escaped
		}
		keys = append(keys, "no_such_key", strings.ToUpper(keys[0]))
		for range 3000 {
			var fields []string
			for range rng.IntN(len(keys) + 2) {
				k := keys[rng.IntN(len(keys))]
				if strings.HasPrefix(k, `"`) {
					k = strings.Replace(strings.Trim(k, `"`), "_", `\u005f`, 1)
				}
				fields = append(fields, fmt.Sprintf("%q:%s", k, values[rng.IntN(len(values))]))
			}
			raw := "{" + strings.Join(fields, ",") + "}"
			raw = strings.ReplaceAll(raw, `\\u005f`, `\u005f`)
			checked++
			if !s.shape.admits([]byte(raw)) {
				continue
			}
			admitted++
			if err := validateJSON(s.resolved, []byte(raw)); err != nil {
				t.Fatalf("%s: the fast check admits %s, which its schema refuses: %v", name, raw, err)
			}
		}
	}
	t.Logf("%d of %d argument sets admitted", admitted, checked)
	if admitted == 0 || admitted == checked {
		t.Errorf("admitted %d of %d: the generator does not exercise both sides of the check", admitted, checked)
	}
}

// FuzzFastCheck: for send_message's schema, what the fast check admits
// the schema accepts. go test runs the seeds; go test -fuzz=FuzzFastCheck
// ./mcpserver runs it for real.
func FuzzFastCheck(f *testing.F) {
	for _, seed := range []string{
		`{"session_token":"s","target_agent_id":"a","content":"x"}`,
		`{"session_token":"s","target_agent_id":"a","content":"x","content":7}`,
		`{"session_token":"s","target_agent_id":"a","Content":"x"}`,
		`{"session_token":"s","target_agent_id":"a","cont\u0065nt":"x"}`,
		`{"session_token":"s","target_agent_id":"a","content":"x",}`,
		`{"session_token":"s","target_agent_id":"a","content":null}`,
		` {"session_token":"s","target_agent_id":"a","content":"x"} `,
		`null`, `[]`, `{}`,
	} {
		f.Add(seed)
	}
	s := toolShapes(f)["send_message"]
	f.Fuzz(func(t *testing.T, raw string) {
		if s.shape.admits([]byte(raw)) {
			if err := validateJSON(s.resolved, []byte(raw)); err != nil {
				t.Fatalf("the fast check admits %s, which the schema refuses: %v", raw, err)
			}
		}
	})
}

// TestShapeOf: a schema with any keyword the fast check does not know has
// no shape, so its calls are left to the schema.
func TestShapeOf(t *testing.T) {
	for _, c := range []struct {
		schema string
		shaped bool
	}{
		{`{"type":"object","properties":{"a":{"type":"string","description":"d"}},"required":["a"],"additionalProperties":false}`, true},
		{`{"type":"object","properties":{"a":{"type":["null","boolean"]},"b":{"type":"string","enum":["x","y"]},"c":{"type":"integer"}},"additionalProperties":false}`, true},
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, false},                                               // others allowed
		{`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":true}`, false},                   // others allowed
		{`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":{}}`, false},                     // others allowed
		{`{"type":"array","additionalProperties":false}`, false},                                                        // not an object
		{`{"type":"object","properties":{"a":{"type":"string","pattern":"^x"}},"additionalProperties":false}`, false},   // a pattern
		{`{"type":"object","properties":{"a":{"type":"integer","minimum":1}},"additionalProperties":false}`, false},     // a minimum
		{`{"type":"object","properties":{"a":{"type":"string","default":"x"}},"additionalProperties":false}`, false},    // a default
		{`{"type":"object","properties":{"a":{"type":"number"}},"additionalProperties":false}`, false},                  // a number
		{`{"type":"object","properties":{"a":{"type":"object"}},"additionalProperties":false}`, false},                  // nested
		{`{"type":"object","properties":{"a":{"type":"integer","enum":[1]}},"additionalProperties":false}`, false},      // an enum of numbers
		{`{"type":"object","properties":{"a":{}},"additionalProperties":false}`, false},                                 // no type
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["b"],"additionalProperties":false}`, false}, // required unknown
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["a","a"],"additionalProperties":false}`, false},
		{`{"type":"object","properties":{"a":{"type":"string"}},"minProperties":1,"additionalProperties":false}`, false},
		{`{"type":"object","properties":{"a":{"type":"string"},"a":{"type":"integer"}},"additionalProperties":false}`, false},
	} {
		if got := shapeOf([]byte(c.schema)) != nil; got != c.shaped {
			t.Errorf("shapeOf(%s) shaped = %v, want %v", c.schema, got, c.shaped)
		}
	}
}
