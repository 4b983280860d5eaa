package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdkjson "github.com/segmentio/encoding/json"
	"github.com/tidwall/gjson"
)

// This file is how a typed tool's call runs: its arguments checked against
// its input schema and decoded into In, its handler called, its Out encoded
// as the result's structured content. The SDK's mcp.AddTool does the same
// through reflection on every call (the arguments decoded into a map,
// validated, encoded and decoded again; the output encoded, decoded into a
// map, validated and encoded again), about a fifth of the CPU of an
// in-process send_message round trip (BenchmarkToolCall). Here the arguments that the schema's simple shape admits
// (section "fast check") are decoded once into In; any others take the
// SDK's own steps, with the SDK's own messages, so that a model sees
// exactly what it saw before. TestToolCallsMatchTheSDK compares both paths
// call by call against a server registered through mcp.AddTool.

// EnvCheckSchemas names the variable that, set to "1", makes aipm serve
// check what the fast path skips: every argument set it admits is also
// validated against the input schema, and every structured result against
// the output schema with every shared record spelled out
// (fullOutputSchema, tools.go); a miss is an internal error. The tests run
// every server this way.
const EnvCheckSchemas = "AIPM_CHECK_SCHEMAS"

// typedTool is what a typed tool's calls need of its schemas. All of it is
// made when first needed, not at registration (aipm serve must answer
// fast): the fast check's shape, read from the schema's JSON, on the first
// call; the resolved schemas, which inference and resolution take about a
// millisecond to build, on the first call that takes the slow path (or on
// the first call, when check is set).
type typedTool struct {
	name   string
	listed json.RawMessage // the input schema as listed (schemas/)
	input  func() *jsonschema.Schema
	output func() *jsonschema.Schema
	check  bool // EnvCheckSchemas

	shapeOnce sync.Once
	shape     *objectShape // nil: every call takes the slow path

	resolveOnce sync.Once
	resolved    *jsonschema.Resolved // the input schema
	outputs     *jsonschema.Resolved // the output schema, when check is set
	err         error
}

// fastShape returns the fast check's shape, or nil.
func (t *typedTool) fastShape() *objectShape {
	t.shapeOnce.Do(func() { t.shape = shapeOf(t.listed) })
	return t.shape
}

// schemas resolves the input schema (and the output schema when check is
// set) once.
func (t *typedTool) schemas() error {
	t.resolveOnce.Do(func() {
		if t.resolved, t.err = t.input().Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true}); t.err != nil {
			t.err = fmt.Errorf("input schema of %s: %w", t.name, t.err)
			return
		}
		if t.check {
			if t.outputs, t.err = t.output().Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true}); t.err != nil {
				t.err = fmt.Errorf("output schema of %s: %w", t.name, t.err)
			}
		}
	})
	return t.err
}

// typedHandler returns the mcp.ToolHandler that runs h for t; Out must be
// a struct, whose JSON object is the structured content.
func typedHandler[In, Out any](t *typedTool, h mcp.ToolHandlerFor[In, Out]) mcp.ToolHandler {
	if k := reflect.TypeFor[Out]().Kind(); k != reflect.Struct {
		panic(fmt.Sprintf("tool %s: its output must be a struct, not a %s", t.name, k))
	}
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if t.check {
			if err := t.schemas(); err != nil {
				return nil, err
			}
		}
		in, refused, err := decodeArguments[In](t, req.Params.Arguments)
		if refused != nil || err != nil {
			return refused, err
		}
		res, out, err := h(ctx, req, in)
		if err != nil {
			// As the SDK: a JSON-RPC error is returned as one; any other
			// error is the tool's error result.
			if wireErr, ok := err.(*jsonrpc.Error); ok {
				return nil, wireErr
			}
			var errRes mcp.CallToolResult
			errRes.SetError(err)
			return &errRes, nil
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		raw, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("marshaling output: %w", err)
		}
		if t.outputs != nil {
			if err := validateJSON(t.outputs, raw); err != nil {
				return nil, fmt.Errorf("validating tool output: %w", err)
			}
		}
		res.StructuredContent = json.RawMessage(raw)
		if res.Content == nil {
			res.Content = []mcp.Content{&mcp.TextContent{Text: string(raw)}}
		}
		return res, nil
	}
}

// decodeArguments decodes raw into In. Arguments the fast check admits are
// decoded as they are; any others go through the steps of the SDK's
// mcp.AddTool, whose error result is returned as refused.
func decodeArguments[In any](t *typedTool, raw json.RawMessage) (in In, refused *mcp.CallToolResult, err error) {
	if shape := t.fastShape(); shape != nil && shape.admits(raw) {
		if t.check {
			if err := validateJSON(t.resolved, raw); err != nil {
				return in, nil, fmt.Errorf("the fast check of %s admitted arguments its schema refuses: %w", t.name, err)
			}
		}
		if err := decodeAsTheSDK(raw, &in); err != nil {
			return in, nil, fmt.Errorf("decode admitted arguments of %s: %w", t.name, err)
		}
		return in, nil, nil
	}
	// The SDK's steps (mcp.AddTool): decode into a map, apply defaults,
	// validate, encode again and decode into In.
	if err := t.schemas(); err != nil {
		return in, nil, err
	}
	args := map[string]any{}
	if len(raw) > 0 {
		if err := decodeAsTheSDK(raw, &args); err != nil {
			return in, errorResult(fmt.Errorf("validating \"arguments\": unmarshaling arguments: %w", err)), nil
		}
	}
	var v any = args
	if err := t.resolved.ApplyDefaults(&v); err != nil {
		return in, errorResult(fmt.Errorf("validating \"arguments\": applying schema defaults:\n%w", err)), nil
	}
	if err := t.resolved.Validate(&v); err != nil {
		return in, errorResult(fmt.Errorf("validating \"arguments\": %v", err)), nil
	}
	again, err := json.Marshal(v)
	if err != nil {
		return in, errorResult(fmt.Errorf("validating \"arguments\": marshalling with defaults: %w", err)), nil
	}
	if err := decodeAsTheSDK(again, &in); err != nil {
		return in, errorResult(err), nil
	}
	return in, nil, nil
}

// decodeAsTheSDK decodes data into v as the SDK's internal/json.Unmarshal
// does (segmentio's decoder, field names matched case-sensitively), so that
// what it accepts and the errors it gives are the SDK's. The SDK checks
// the nesting depth of the whole message, arguments included, before.
func decodeAsTheSDK(data []byte, v any) error {
	_, err := sdkjson.Parse(data, v, sdkjson.DontMatchCaseInsensitiveStructFields)
	return err
}

func errorResult(err error) *mcp.CallToolResult {
	var res mcp.CallToolResult
	res.SetError(err)
	return &res
}

// validateJSON validates the JSON value raw against schema.
func validateJSON(schema *jsonschema.Resolved, raw []byte) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	return schema.Validate(&v)
}

// The fast check.
//
// objectShape is an input schema that is an object of named properties,
// some required, no others allowed, each a string (perhaps one of an enum),
// an integer, a boolean, null, or an array of strings. That is every aipm tool's input schema
// today; any other schema, or a property with any other keyword, has no
// shape and its tool's calls all take the slow path. admits is sound, not
// complete: what it admits the schema accepts (TestFastCheckIsSound), and
// what it does not is left to the schema to judge and explain.
type objectShape struct {
	props    map[string]valueShape
	required uint64 // the bits of the required properties
}

type valueShape struct {
	types kinds
	enum  map[string]bool // the allowed strings; nil for any
	bit   uint64          // set for a required property
}

type kinds uint8

const (
	kindString kinds = 1 << iota
	kindInteger
	kindBoolean
	kindNull
	kindStrings // an array of strings
)

// shapeOf returns the shape of the input schema whose JSON is schema, or
// nil if it has none. Only the keywords named here may appear; any other
// (a pattern, a minimum, a nested object...) leaves the schema to judge.
func shapeOf(schema []byte) *objectShape {
	root := gjson.ParseBytes(schema)
	if !root.IsObject() || !onlyKeys(root, "type", "properties", "required", "additionalProperties", "description", "title") ||
		root.Get("type").Str != "object" || root.Get("additionalProperties").Type != gjson.False {
		return nil
	}
	shape := &objectShape{props: map[string]valueShape{}}
	ok := true
	root.Get("properties").ForEach(func(name, p gjson.Result) bool {
		v, known := valueShapeOf(p)
		if _, twice := shape.props[name.Str]; twice || !known {
			ok = false
			return false
		}
		shape.props[name.Str] = v
		return true
	})
	required := root.Get("required").Array()
	if !ok || len(required) > 64 {
		return nil
	}
	for i, r := range required {
		p, known := shape.props[r.Str]
		if r.Type != gjson.String || !known || p.bit != 0 {
			return nil
		}
		p.bit = 1 << i
		shape.props[r.Str] = p
		shape.required |= p.bit
	}
	return shape
}

// kindsOf returns the kinds a property's schema p names in its type (one
// or a list); ok is false for any other type.
func kindsOf(p gjson.Result) (k kinds, ok bool) {
	types := p.Get("type")
	names := []gjson.Result{types}
	if types.IsArray() {
		names = types.Array()
	}
	for _, name := range names {
		if name.Type != gjson.String {
			return 0, false
		}
		switch name.Str {
		case "string":
			k |= kindString
		case "integer":
			k |= kindInteger
		case "boolean":
			k |= kindBoolean
		case "null":
			k |= kindNull
		case "array":
			if !p.Get("items").Exists() {
				return 0, false
			}
			k |= kindStrings
		default:
			return 0, false
		}
	}
	return k, true
}

// valueShapeOf returns the shape of a property's schema p.
func valueShapeOf(p gjson.Result) (valueShape, bool) {
	if !p.IsObject() || !onlyKeys(p, "type", "enum", "items", "description", "title") {
		return valueShape{}, false
	}
	if items := p.Get("items"); items.Exists() && (!onlyKeys(items, "type") || items.Get("type").Str != "string" || p.Get("type").Str != "array") {
		return valueShape{}, false // only an array of strings
	}
	var v valueShape
	var ok bool
	if v.types, ok = kindsOf(p); !ok {
		return valueShape{}, false
	}
	if enum := p.Get("enum"); enum.Exists() {
		if v.types != kindString || !enum.IsArray() {
			return valueShape{}, false
		}
		v.enum = map[string]bool{}
		for _, e := range enum.Array() {
			if e.Type != gjson.String {
				return valueShape{}, false
			}
			v.enum[e.Str] = true
		}
	}
	return v, v.types != 0
}

// onlyKeys reports whether the JSON object obj has no key but those named.
func onlyKeys(obj gjson.Result, allowed ...string) bool {
	ok := true
	obj.ForEach(func(key, _ gjson.Result) bool {
		ok = slices.Contains(allowed, key.Str)
		return ok
	})
	return ok
}

// admits reports whether raw is a JSON object that the shape's schema
// accepts as it is (no defaults to apply, no conversion on decoding).
func (o *objectShape) admits(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' || !gjson.ValidBytes(raw) {
		return false
	}
	ok := true
	var seen uint64 // the required properties given
	gjson.ParseBytes(raw).ForEach(func(key, value gjson.Result) bool {
		p, known := o.props[key.Str]
		if !known || !p.admits(value) {
			ok = false
			return false
		}
		seen |= p.bit // a key given twice was checked both times
		return true
	})
	return ok && seen == o.required
}

func (v valueShape) admits(value gjson.Result) bool {
	switch value.Type {
	case gjson.String:
		return v.types&kindString != 0 && (v.enum == nil || v.enum[value.Str])
	case gjson.True, gjson.False:
		return v.types&kindBoolean != 0
	case gjson.Null:
		return v.types&kindNull != 0
	case gjson.Number:
		return v.types&kindInteger != 0 && isSmallInteger(value.Raw)
	case gjson.JSON:
		return v.types&kindStrings != 0 && value.IsArray() && allStrings(value)
	}
	return false
}

// allStrings reports whether every element of the JSON array a is a string.
func allStrings(a gjson.Result) bool {
	ok := true
	a.ForEach(func(_, e gjson.Result) bool {
		ok = e.Type == gjson.String
		return ok
	})
	return ok
}

// isSmallInteger reports whether a JSON number is written as an integer of
// at most 15 digits: one that a float64 (the map the schema is checked on)
// holds exactly and an int decodes as it is. Others (1.0, 1e3, 2^60) take
// the slow path, which treats them as the SDK does.
func isSmallInteger(num string) bool {
	digits := num
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || (digits[0] == '0' && len(digits) > 1) {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}
