package lockedfile

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
)

// EncodeDoc renders v the way every JSON document is stored: indented two
// spaces, keys in struct order (maps sorted), a final newline, no HTML
// escaping. Stable output keeps editors and git diff clean.
func EncodeDoc(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// EncodeKeeping encodes doc as EncodeDoc does, with the top-level keys of
// the document it was read from (old) that doc's type does not know
// appended after its own, in their order: hand-added keys survive.
func EncodeKeeping(doc any, old []byte) ([]byte, error) {
	known := jsonKeys(reflect.TypeOf(doc))
	var extra []string
	var oldKeys map[string]json.RawMessage
	if known != nil && len(old) > 0 && json.Unmarshal(old, &oldKeys) == nil {
		for k := range oldKeys {
			if !known[strings.ToLower(k)] { // encoding/json matches keys without case
				extra = append(extra, k)
			}
		}
	}
	if len(extra) == 0 {
		return EncodeDoc(doc)
	}
	sort.Strings(extra)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	compact := bytes.TrimRight(buf.Bytes(), "\n")
	if len(compact) < 2 || compact[len(compact)-1] != '}' {
		return EncodeDoc(doc)
	}
	merged := append([]byte(nil), compact[:len(compact)-1]...)
	for _, k := range extra {
		if len(merged) > 1 {
			merged = append(merged, ',')
		}
		key, _ := json.Marshal(k)
		merged = append(append(append(merged, key...), ':'), oldKeys[k]...)
	}
	merged = append(merged, '}')
	var out bytes.Buffer
	if err := json.Indent(&out, merged, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// jsonKeys is the set of JSON keys, in lower case, a struct type (or pointer to one)
// encodes, embedded structs included; nil for other types (maps keep
// every key anyway).
func jsonKeys(t reflect.Type) map[string]bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	keys := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "":
			for k := range jsonKeys(f.Type) {
				keys[k] = true // already lower case
			}
		case !f.IsExported():
		case name == "":
			keys[strings.ToLower(f.Name)] = true
		default:
			keys[strings.ToLower(name)] = true
		}
	}
	return keys
}
