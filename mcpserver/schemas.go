package mcpserver

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// schemaFiles holds the input and output schema of every tool as aipm
// serves them, in schemas/<tool>.input.json and schemas/<tool>.output.json:
// the JSON the SDK writes for the schemas inferred from the tool's Go types
// (see addTool), indented for review; the encoder compacts them on the
// wire. Inference walks the types by reflection and builds a tree of
// schema values for each; done for every tool at every start, it was most
// of what aipm serve did before it could answer (DESIGN section 13, P4), so
// a tool's calls infer its schemas on its first call (toolcall.go). These
// files are the one committed copy of the schemas (testdata/toolsnaps pins
// the rest of each tool's listing). TestServedSchemas fails when a file
// differs from the inference; UPDATE_TOOLSNAPS=1 rewrites them, with the
// snapshots.
//
//go:embed schemas/*.json
var schemaFiles embed.FS

// servedSchemas returns tool's input and output schemas from schemaFiles.
func servedSchemas(tool string) (in, out json.RawMessage) {
	read := func(kind string) json.RawMessage {
		data, err := schemaFiles.ReadFile("schemas/" + tool + "." + kind + ".json")
		if err != nil {
			panic(fmt.Sprintf("tool %s has no %s schema in mcpserver/schemas: run UPDATE_TOOLSNAPS=1 go test ./mcpserver -run TestServedSchemas", tool, kind))
		}
		return bytes.TrimSpace(data)
	}
	return read("input"), read("output")
}

// tidy rewrites an inferred schema, in place, into the plain form every
// client reads the same way, and returns it. Inference types a Go slice or
// pointer as ["null", T]; a type array is legal JSON Schema, but some
// clients read type as one string and reject the tool or drop the
// constraint, and no aipm result holds null (a nil pointer or slice field
// is omitted, or an empty list is [], as TestResultsNeverNull checks), so
// the type is T alone. TestSchemaLint holds every served schema to this.
func tidy(s *jsonschema.Schema) *jsonschema.Schema {
	eachSchema(s, func(s *jsonschema.Schema) {
		if types := slices.DeleteFunc(slices.Clone(s.Types), func(t string) bool { return t == "null" }); len(types) == 1 {
			s.Type, s.Types = types[0], nil
		}
	})
	return s
}

// undescribed removes, in place, the description of s and of every schema
// in it (see outputSchema).
func undescribed(s *jsonschema.Schema) {
	eachSchema(s, func(s *jsonschema.Schema) { s.Description = "" })
}

// eachSchema calls fn on s and on every schema in it, as tidy and
// undescribed need: properties, definitions, items, additional properties.
func eachSchema(s *jsonschema.Schema, fn func(*jsonschema.Schema)) {
	if s == nil {
		return
	}
	fn(s)
	for _, sub := range s.Properties {
		eachSchema(sub, fn)
	}
	for _, sub := range s.Defs {
		eachSchema(sub, fn)
	}
	eachSchema(s.Items, fn)
	eachSchema(s.AdditionalProperties, fn)
}
