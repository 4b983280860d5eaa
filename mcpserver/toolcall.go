package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
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

// EnvCheckSchemas, when "1", makes aipm serve check what the fast path
// skips: every argument set it admits is also validated against the input
// schema, and every structured result against the output schema; a miss is
// an internal error. The tests run every server this way.
const EnvCheckSchemas = "AIPM_CHECK_SCHEMAS"

// typedTool is what a typed tool's calls need of its schemas, prepared on
// its first call (not at registration: aipm serve must answer fast).
type typedTool struct {
	name   string
	input  func() *jsonschema.Schema
	output func() *jsonschema.Schema
	check  bool // EnvCheckSchemas

	once     sync.Once
	resolved *jsonschema.Resolved // the input schema, for the slow path
	outputs  *jsonschema.Resolved // the output schema, when check is set
	shape    *objectShape         // nil: every call takes the slow path
	err      error
}

func (t *typedTool) prepare() error {
	t.once.Do(func() {
		schema := t.input()
		if t.resolved, t.err = schema.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true}); t.err != nil {
			t.err = fmt.Errorf("input schema of %s: %w", t.name, t.err)
			return
		}
		t.shape = shapeOf(schema)
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
		if err := t.prepare(); err != nil {
			return nil, err
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
	if t.shape != nil && t.shape.admits(raw) {
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
// an integer, a boolean, or null. That is every aipm tool's input schema
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
)

// shapeOf returns schema's shape, or nil if it has none.
func shapeOf(schema *jsonschema.Schema) *objectShape {
	top := *schema
	top.Type, top.Properties, top.Required, top.AdditionalProperties = "", nil, nil, nil
	top.Description, top.Title, top.PropertyOrder = "", "", nil
	if schema.Type != "object" || !isFalse(schema.AdditionalProperties) || !reflect.ValueOf(top).IsZero() {
		return nil
	}
	shape := &objectShape{props: map[string]valueShape{}}
	for name, p := range schema.Properties {
		v, ok := valueShapeOf(p)
		if !ok {
			return nil
		}
		shape.props[name] = v
	}
	if len(schema.Required) > 64 {
		return nil
	}
	for i, name := range schema.Required {
		p, ok := shape.props[name]
		if !ok {
			return nil
		}
		p.bit = 1 << i
		shape.props[name] = p
		shape.required |= p.bit
	}
	return shape
}

func valueShapeOf(p *jsonschema.Schema) (valueShape, bool) {
	if p == nil {
		return valueShape{}, false
	}
	rest := *p
	rest.Type, rest.Types, rest.Enum, rest.Description, rest.Title = "", nil, nil, "", ""
	if !reflect.ValueOf(rest).IsZero() {
		return valueShape{}, false
	}
	names := p.Types
	if p.Type != "" {
		names = append([]string{p.Type}, names...)
	}
	var v valueShape
	for _, name := range names {
		switch name {
		case "string":
			v.types |= kindString
		case "integer":
			v.types |= kindInteger
		case "boolean":
			v.types |= kindBoolean
		case "null":
			v.types |= kindNull
		default:
			return valueShape{}, false
		}
	}
	if v.types == 0 {
		return valueShape{}, false
	}
	if p.Enum != nil {
		if v.types != kindString {
			return valueShape{}, false
		}
		v.enum = map[string]bool{}
		for _, e := range p.Enum {
			s, ok := e.(string)
			if !ok {
				return valueShape{}, false
			}
			v.enum[s] = true
		}
	}
	return v, true
}

// isFalse reports whether s is the schema false, which jsonschema holds as
// {"not": {}}.
func isFalse(s *jsonschema.Schema) bool {
	if s == nil || s.Not == nil || !reflect.ValueOf(*s.Not).IsZero() {
		return false
	}
	rest := *s
	rest.Not = nil
	return reflect.ValueOf(rest).IsZero()
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
	}
	return false
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
