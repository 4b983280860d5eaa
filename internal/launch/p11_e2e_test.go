package launch_test

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"aipm/internal/clients"
	"aipm/internal/scriptedmodel"
)

// maxOwnDefinitions is DESIGN 13's P11 budget: aipm's own bytes of its
// tool definitions in each client's shape, what the client adds to every
// tool counted apart.
const maxOwnDefinitions = 10_000

// p11Runs are how each client is run so that one of its model requests
// offers every aipm tool: the script, and which request to measure.
var p11Runs = map[string]struct {
	script scriptedmodel.Script
}{
	"claude":   {script: done}, // aipm launch loads aipm's tools whole (alwaysLoad)
	"codex":    {script: searchThenDone},
	"gemini":   {script: done},
	"qwen":     {script: done},
	"copilot":  {script: done}, // a model it does not know: aipm's tools up front
	"opencode": {script: done},
}

func done(*scriptedmodel.Request) scriptedmodel.Turn { return scriptedmodel.Turn{Text: "done"} }

// searchThenDone makes the one search aipm's instructions give, where the
// client defers aipm's tools, then stops.
func searchThenDone(r *scriptedmodel.Request) scriptedmodel.Turn {
	if call, ok := scriptedmodel.SearchHintCall(r); ok && len(r.Results) == 0 {
		return scriptedmodel.Turn{Calls: []scriptedmodel.Call{call}}
	}
	return done(r)
}

// TestToolDefinitionsAsSent (issue 47, guarantee 6): P11 measured in the
// model request of each real client that offers every aipm tool, as the
// client sent it: aipm's own bytes (each tool's name as the client names
// it, its description and aipm's input schema as the client encodes them)
// within the budget; what the client adds to every tool (its envelope, its
// own arguments) counted apart and shown, and so is a namespace's name and
// description (Codex's: aipm's server instructions, whose own budget is
// TestSize's).
func TestToolDefinitionsAsSent(t *testing.T) {
	for client, run := range p11Runs {
		t.Run(client, func(t *testing.T) {
			t.Parallel()
			e := newE2E(t, client, run.script)
			served := e.servedSchemas()
			e.launch(nil)
			var full *scriptedmodel.Request
			for _, r := range e.model.Requests() {
				if len(missing(r, sortedKeys(served))) == 0 {
					full = r
					break
				}
			}
			if full == nil {
				t.Fatalf("no model request of %s offers every aipm tool", client)
			}
			sent, own := 0, 0
			var perTool []string
			for _, tool := range full.Tools {
				name := bareAipmName(tool)
				if name == "" {
					continue
				}
				o := ownBytes(t, tool.Definition, served[name])
				sent += len(tool.Definition)
				own += o
				perTool = append(perTool, name+" "+itoa(len(tool.Definition))+"/"+itoa(o))
			}
			wrapper := 0 // a namespace's name and description: aipm's instructions
			for ns, def := range full.Namespaces {
				if strings.Trim(ns, "_") == "mcp__aipm" {
					wrapper = nsWrapper(t, def)
					sent = len(def)
				}
			}
			t.Logf("%s: aipm's tool definitions as sent %d B; aipm's own %d B (at most %d), and %d B of aipm's instructions as the namespace's description; the client's additions %d B; per tool sent/own: %s",
				client, sent, own, maxOwnDefinitions, wrapper, sent-own-wrapper, strings.Join(perTool, ", "))
			if own > maxOwnDefinitions {
				t.Errorf("%s: aipm's own bytes of its tool definitions as the client sends them are %d, more than %d (DESIGN 13, P11)", client, own, maxOwnDefinitions)
			}
		})
	}
}

// ownBytes is aipm's part of a tool definition def as a client sent it:
// def with only its name, its description and its input schema (under
// whatever key, at whatever depth the client puts them: the keys are the
// client's, and each is counted as "input_schema"), the schema holding
// only the properties aipm serves (served).
func ownBytes(t *testing.T, def json.RawMessage, served map[string]bool) int {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(def, &v); err != nil {
		t.Fatalf("a tool definition as sent is not JSON: %v", err)
	}
	if fn, ok := v["function"].(map[string]any); ok { // Chat Completions
		v = fn
	}
	own := map[string]any{}
	for key, value := range v {
		switch key {
		case "name", "description":
			own[key] = value
		case "input_schema", "parameters", "parametersJsonSchema", "inputSchema":
			own["input_schema"] = aipmSchema(value, served)
		}
	}
	return len(compact(t, own))
}

// aipmSchema is schema without the properties aipm does not serve (a
// client's own arguments) and their required entries.
func aipmSchema(schema any, served map[string]bool) any {
	s, ok := schema.(map[string]any)
	if !ok {
		return schema
	}
	out := map[string]any{}
	for k, v := range s {
		out[k] = v
	}
	if props, ok := s["properties"].(map[string]any); ok {
		kept := map[string]any{}
		for name, p := range props {
			if served[name] {
				kept[name] = p
			}
		}
		out["properties"] = kept
	}
	if req, ok := s["required"].([]any); ok {
		var kept []any
		for _, name := range req {
			if n, _ := name.(string); served[n] {
				kept = append(kept, name)
			}
		}
		if len(kept) == 0 {
			delete(out, "required")
		} else {
			out["required"] = kept
		}
	}
	return out
}

// nsWrapper is aipm's part of a namespace's definition besides its tools:
// its name and description (aipm's server instructions), as
// {"name":…,"description":…,"tools":[]}.
func nsWrapper(t *testing.T, def json.RawMessage) int {
	var v map[string]any
	json.Unmarshal(def, &v)
	return len(compact(t, map[string]any{"name": v["name"], "description": v["description"], "tools": []any{}})) - len(`[]`)
}

func compact(t *testing.T, v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// bareAipmName is aipm's name of a tool as a client offers it, or "".
func bareAipmName(tool scriptedmodel.Tool) string {
	if strings.Trim(tool.Namespace, "_") == "mcp__aipm" {
		return tool.Name
	}
	for _, client := range clients.Names() {
		c, _ := clients.Get(client)
		if name, ok := strings.CutPrefix(tool.Name, c.Hooks.OwnToolPrefix); ok && c.Hooks.OwnToolPrefix != "" {
			return name
		}
	}
	return ""
}

func sortedKeys(m map[string]map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
