package lockedfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"
)

// JSONWords says what a JSON decoding error of data means, for a person
// who edits the file: what was unexpected and at which column of its line
// (JSONLine is the line), or which field holds what kind of value where
// another belongs. Never the decoder's terms (Go types, "invalid character
// ... looking for"). An error that is not the decoder's (a type's own
// check) is its own text. Callers say what data is ("invalid JSON: ").
func JSONWords(data []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var pe *time.ParseError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return endsEarly
	case errors.As(err, &se):
		at, early := syntaxAt(data)
		switch {
		case early:
			return endsEarly
		case at < 0:
			return "it is not valid JSON"
		}
		column := at - bytes.LastIndexByte(data[:at], '\n')
		return fmt.Sprintf("unexpected %s at column %d", jsonByte(data[at]), column)
	case errors.As(err, &te):
		field := "this value"
		if te.Field != "" {
			field = te.Field
		}
		return fmt.Sprintf("%s must be %s, not %s", field, jsonKindOf(te.Type), jsonValueWords(te.Value))
	case errors.As(err, &pe):
		return fmt.Sprintf("%q is not a time in RFC 3339 form, such as 2026-01-02T15:04:05Z", pe.Value)
	}
	return err.Error()
}

const endsEarly = "it ends too early (a closing quote, } or ] is missing)"

// JSONLine is the line of data a JSON decoding error is at (1 when the
// error does not say).
func JSONLine(data []byte, err error) int {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	offset := 0
	switch {
	case errors.As(err, &se):
		if at, early := syntaxAt(data); early {
			offset = len(bytes.TrimRight(data, " \t\r\n"))
		} else {
			offset = max(at, 0)
		}
	case errors.As(err, &te):
		offset = int(te.Offset)
	}
	return 1 + bytes.Count(data[:min(max(offset, 0), len(data))], []byte("\n"))
}

// syntaxAt is the index of the byte where data stops being JSON (-1: not
// found), or early: data ends before its value does. json.Unmarshal says
// both as a SyntaxError at the end, and a Decoder's offsets in a stream
// count from where its value began; one fresh Decoder over the whole of
// data tells them apart, with offsets from data's start.
func syntaxAt(data []byte) (at int, early bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	err := dec.Decode(new(any))
	var se *json.SyntaxError
	switch {
	case err == nil: // a whole value, then more: the first byte of the rest
		rest := int(dec.InputOffset())
		if i := bytes.IndexFunc(data[rest:], func(r rune) bool { return !strings.ContainsRune(" \t\r\n", r) }); i >= 0 {
			return rest + i, false
		}
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return -1, true
	case errors.As(err, &se) && se.Offset > 0 && int(se.Offset) <= len(data):
		return int(se.Offset) - 1, false
	}
	return -1, false
}

// jsonByte names the byte where JSON went wrong.
func jsonByte(b byte) string {
	switch b {
	case '\n':
		return "end of line"
	case '"':
		return `'"'`
	}
	if b < ' ' || b >= 0x7f {
		return fmt.Sprintf("byte 0x%02x", b)
	}
	return fmt.Sprintf("'%c'", b)
}

// jsonKindOf says what JSON value a Go type decodes from.
func jsonKindOf(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "another kind of value"
	}
	if t == reflect.TypeFor[time.Time]() {
		return "a time string"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number, 0 or more"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another kind of value"
}

// jsonValueWords says what the decoder found ("number", "number -1",
// "string", "array", "object", "bool").
func jsonValueWords(v string) string {
	kind, rest, _ := strings.Cut(v, " ")
	switch kind {
	case "number":
		if rest != "" {
			return "the number " + rest
		}
		return "a number"
	case "string":
		return "a string"
	case "array":
		return "a list"
	case "object":
		return "an object"
	case "bool":
		return "true or false"
	}
	return v
}
