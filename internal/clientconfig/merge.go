package clientconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"aipm/internal/lockedfile"
)

// JSONObject is a JSON object that keeps its members' order, so that a
// merge changes only the members it sets.
type JSONObject []jsonMember

type jsonMember struct {
	key   string
	value json.RawMessage
}

// jsonError is why data is not the JSON it should be, with its line.
func jsonError(data []byte, err error) error {
	return fmt.Errorf("it is not valid JSON at line %d: %s", lockedfile.JSONLine(data, err), lockedfile.JSONWords(data, err))
}

// ParseObject decodes one JSON object; empty input is an empty object.
func ParseObject(data []byte) (JSONObject, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return JSONObject{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("it is not a JSON object")
	}
	var o JSONObject
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, jsonError(data, err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, jsonError(data, err)
		}
		o = append(o, jsonMember{key: t.(string), value: v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, jsonError(data, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("it holds more than one JSON document")
	}
	return o, nil
}

// Get is the value of o's member key, and whether o has one.
func (o JSONObject) Get(key string) (json.RawMessage, bool) {
	for _, m := range o {
		if m.key == key {
			return m.value, true
		}
	}
	return nil, false
}

// Set gives o's member key the value v, in its place, or appended when
// o has no member key.
func (o *JSONObject) Set(key string, v json.RawMessage) {
	for i, m := range *o {
		if m.key == key {
			(*o)[i].value = v
			return
		}
	}
	*o = append(*o, jsonMember{key: key, value: v})
}

// MarshalJSON is o with its members in their order.
func (o JSONObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Indented is v as a file: two-space indentation and a final newline.
func Indented(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// SameJSON says whether a and b hold the same value.
func SameJSON(a, b []byte) bool {
	var va, vb any
	return json.Unmarshal(a, &va) == nil && json.Unmarshal(b, &vb) == nil && reflect.DeepEqual(va, vb)
}

// SubObject is the object at key of o (empty when absent).
func SubObject(o JSONObject, key string) (JSONObject, error) {
	raw, ok := o.Get(key)
	if !ok {
		return JSONObject{}, nil
	}
	sub, err := ParseObject(raw)
	if err != nil || (len(sub) == 0 && !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{"))) {
		return nil, fmt.Errorf("its %q is not a JSON object", key)
	}
	return sub, nil
}

// MergeJSONFile reads the JSON object at the project's file name and
// lets merge change it: the change holds the file's new content when
// merge reports a change. It writes nothing (Write does).
func MergeJSONFile(project, name string, merge func(*JSONObject) (string, error)) (FileChange, error) {
	c, data, err := ReadTarget(project, name)
	if err != nil {
		return FileChange{}, err
	}
	root, err := ParseObject(data)
	if err != nil {
		return FileChange{}, fmt.Errorf("%s cannot be merged into: %v: fix it by hand, or move it away and run mcp-config again", name, err)
	}
	if c.what, err = merge(&root); err != nil {
		return FileChange{}, fmt.Errorf("%s cannot be merged into: %v: fix it by hand", name, err)
	}
	if c.what != "" {
		c.data, err = Indented(root)
	}
	return c, err
}

// WholeFile is the change that makes the project's file name hold data,
// a file aipm owns whole (what names it in --write's report).
func WholeFile(project, name string, data []byte, what string) (FileChange, error) {
	c, old, err := ReadTarget(project, name)
	if err != nil || (!c.created && bytes.Equal(old, data)) {
		return c, err
	}
	c.data = data
	c.what = map[bool]string{true: "wrote ", false: "rewrote "}[c.created] + what
	return c, nil
}

// ReadTarget reads the project's file name, which --write is to change:
// a missing one is empty and will be created. The change it returns
// changes nothing until given its new content (FileChange.Change).
func ReadTarget(project, name string) (FileChange, []byte, error) {
	path := filepath.Join(project, name)
	data, exists, err := ReadOptional(path)
	if err != nil {
		return FileChange{}, nil, fmt.Errorf("%s cannot be read (%v), so no file was changed: fix it or move it away, then run mcp-config again", name, PathReason(err))
	}
	c := FileChange{path: path, name: name, created: !exists}
	if exists {
		c.old = data
	}
	return c, data, nil
}

// MergeServer sets aipm's server entry (ServerName) in the object at key
// of root, saying what it did: "added the aipm server", "replaced the aipm
// server's entry", or "" when root held entry already.
func MergeServer(root *JSONObject, key string, entry json.RawMessage) (string, error) {
	servers, err := SubObject(*root, key)
	if err != nil {
		return "", err
	}
	old, had := servers.Get(ServerName)
	if had && SameJSON(old, entry) {
		return "", nil
	}
	servers.Set(ServerName, entry)
	raw, err := json.Marshal(servers)
	if err != nil {
		return "", err
	}
	root.Set(key, raw)
	if had {
		return "replaced the aipm server's entry", nil
	}
	return "added the aipm server", nil
}

// JoinAnd joins clauses as "a, b and c".
func JoinAnd(clauses []string) string {
	if len(clauses) < 2 {
		return strings.Join(clauses, "")
	}
	return strings.Join(clauses[:len(clauses)-1], ", ") + " and " + clauses[len(clauses)-1]
}

// AddToList appends item to the string array at key unless it holds it.
func AddToList(o *JSONObject, key, item string) (bool, error) {
	var list []string
	if raw, ok := o.Get(key); ok {
		if err := json.Unmarshal(raw, &list); err != nil {
			return false, fmt.Errorf("its %q is not a list of strings", key)
		}
	}
	if slices.Contains(list, item) {
		return false, nil
	}
	raw, err := json.Marshal(append(list, item))
	o.Set(key, raw)
	return true, err
}
