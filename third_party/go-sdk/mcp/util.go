// Copyright 2025 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by an MIT-style
// license that can be found in the LICENSE file.

package mcp

import (
	"encoding/json"
	"errors"

	internaljson "github.com/modelcontextprotocol/go-sdk/internal/json"
	segjson "github.com/segmentio/encoding/json"
)

func assert(cond bool, msg string) {
	if !cond {
		panic(msg)
	}
}

// aipm: schemaJSON is a schema's JSON: a json.RawMessage as it is, checked
// to be one JSON value as json.Marshal checks it (a nil one is null, as
// json.Marshal writes it), anything else marshaled. A server that lists
// precomputed schemas (aipm's, from JSON files) then pays for no encoding
// of them at AddTool.
func schemaJSON(schema any) ([]byte, error) {
	raw, ok := schema.(json.RawMessage)
	switch {
	case !ok:
		return json.Marshal(schema)
	case raw == nil:
		return []byte("null"), nil
	case !segjson.Valid(raw):
		return nil, errors.New("json: invalid JSON in a json.RawMessage schema")
	}
	return raw, nil
}

// remarshal marshals from to JSON, and then unmarshals into to, which must be
// a pointer type.
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
