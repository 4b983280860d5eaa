// Copyright 2025 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by an MIT-style
// license that can be found in the LICENSE file.

package mcp

import (
	"encoding/json"

	internaljson "github.com/modelcontextprotocol/go-sdk/internal/json"
)

func assert(cond bool, msg string) {
	if !cond {
		panic(msg)
	}
}

// remarshal marshals from to JSON, and then unmarshals into to, which must be
// a pointer type.
// aipm: schemaJSON is a schema's JSON: a json.RawMessage as it is (its
// decoder checks it), anything else marshaled. A server that lists
// precomputed schemas (aipm's, from JSON files) then pays for no encoding
// of them at AddTool.
func schemaJSON(schema any) ([]byte, error) {
	if raw, ok := schema.(json.RawMessage); ok {
		return raw, nil
	}
	return json.Marshal(schema)
}

func remarshal(from, to any) error {
	data, err := json.Marshal(from)
	if err != nil {
		return err
	}
	if err := internaljson.Unmarshal(data, to); err != nil {
		return err
	}
	return nil
}
