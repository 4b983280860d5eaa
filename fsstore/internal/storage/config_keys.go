package storage

import (
	"encoding"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

// The keys aipm reads are the toml tags of Config and the types it holds:
// one source, read by reflection. From them come the nearest key an
// unknown one was meant to be (UnknownKey) and the check of every value's
// type (shape), said in aipm's words with the value's line instead of the
// TOML decoder's.

// unknownKey is a key of config.toml that aipm does not read, with the
// known key of the same table nearest to it, if one is near.
type unknownKey struct {
	Key     string // dotted, as TOML names it: "defaults.chat_idel_timeout"
	Nearest string // "chat_idle_timeout", or ""
}

func (u *unknownKey) Error() string {
	if u.Nearest != "" {
		return fmt.Sprintf("unknown key %q is ignored: did you mean %s? (aipm config example prints every key aipm reads)", u.Key, u.Nearest)
	}
	return fmt.Sprintf("unknown key %q is ignored: fix or remove it (aipm config example prints every key aipm reads)", u.Key)
}

// NewWarnings are the warnings of next that old (the config in force
// before it; nil: none) did not have: an unknown key is said once when a
// config is first read, and again only when a reload brings a new one.
func NewWarnings(old, next *Config) []error {
	if old == nil {
		return next.Warnings
	}
	had := map[string]bool{}
	for _, w := range old.Warnings {
		had[warningKey(w)] = true
	}
	var out []error
	for _, w := range next.Warnings {
		if !had[warningKey(w)] {
			out = append(out, w)
		}
	}
	return out
}

// warningKey is what a warning is about: its key, for an unknown key
// (wherever it moved to), else its text.
func warningKey(w error) string {
	var u *unknownKey
	if errors.As(w, &u) {
		return u.Key
	}
	return w.Error()
}

// unknownKeys are the warnings for the keys of the config that no field
// of Config takes (a key under an unknown table is said once, with it).
func (c *configCheck) unknownKeys(undecoded []toml.Key) []error {
	var warnings []error
	unknown := map[string]bool{}
	for _, k := range undecoded {
		if len(k) > 1 && unknown[k[:len(k)-1].String()] {
			unknown[k.String()] = true
			continue // under an unknown table, said once
		}
		unknown[k.String()] = true
		table, key := strings.Join(k[:len(k)-1], "."), k[len(k)-1]
		line := c.loc().find(table, -1, key)
		warnings = append(warnings, &LineError{Path: c.name, Line: line, Err: &unknownKey{Key: k.String(), Nearest: Nearest(key, knownKeys(k[:len(k)-1]))}})
	}
	slices.SortStableFunc(warnings, func(a, b error) int { return errLine(a) - errLine(b) })
	return warnings
}

// tomlField is a key a struct of the config reads, and its Go type.
type tomlField struct {
	key string
	typ reflect.Type
}

// tomlFields are the keys struct type t reads, in its fields' order.
func tomlFields(t reflect.Type) []tomlField {
	var out []tomlField
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		out = append(out, tomlField{name, f.Type})
	}
	return out
}

// tomlFieldOf is the field of struct type t that key decodes into, as the
// TOML decoder matches them: the same name, else one that differs only in
// case.
func tomlFieldOf(t reflect.Type, key string) (tomlField, bool) {
	fields := tomlFields(t)
	for _, f := range fields {
		if f.key == key {
			return f, true
		}
	}
	for _, f := range fields {
		if strings.EqualFold(f.key, key) {
			return f, true
		}
	}
	return tomlField{}, false
}

// knownKeys are the keys aipm reads in the table at path ("defaults",
// "notifications.ttl"; an entry of [[agents]] is "agents"), nil for a
// table it does not know.
func knownKeys(path []string) []string {
	t := reflect.TypeFor[Config]()
	for _, p := range path {
		f, _ := tomlFieldOf(t, p)
		next := f.typ
		if next != nil && next.Kind() == reflect.Slice {
			next = next.Elem() // [[agents]]: each entry
		}
		if next == nil || next.Kind() != reflect.Struct {
			return nil
		}
		t = next
	}
	var keys []string
	for _, f := range tomlFields(t) {
		keys = append(keys, f.key)
	}
	return keys
}

// Nearest is the one rule of "did you mean": the known word (a config
// key, a command's flag) nearest to word, if it is near enough to be what
// was meant (a letter or two off, or swapped, in a word at least three
// times that long; case and '-' for '_' do not count); "" if none is.
func Nearest(word string, known []string) string {
	norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "-", "_") }
	best, bestD := "", 0
	for _, k := range known {
		d := editDistance(norm(word), norm(k))
		if d > 2 || d*3 > utf8.RuneCountInString(k) || best != "" && d >= bestD {
			continue
		}
		best, bestD = k, d
	}
	return best
}

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and swaps of neighbours, one each.
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}

// decodeErrors says why data did not decode into a Config, in aipm's
// words: a line that is not TOML, or every value of the wrong type (or
// refused by its type, as a duration that is none) with its line.
func (c *configCheck) decodeErrors(data []byte, err error) []error {
	var raw map[string]any
	if _, rerr := toml.Decode(string(data), &raw); rerr != nil {
		return []error{c.syntaxError(rerr)}
	}
	c.shape(raw, reflect.TypeFor[Config](), "", -1, 0)
	if len(c.errs) == 0 {
		// Every value has the type aipm reads, yet the decoder refused one:
		// not a case shape knows, so the decoder's line is all there is.
		line := 1
		var pe toml.ParseError
		if errors.As(err, &pe) && pe.Position.Line > 0 {
			line = pe.Position.Line
		}
		c.fail(line, "aipm cannot read this value: compare it with aipm config example")
	}
	slices.SortStableFunc(c.errs, func(a, b error) int { return errLine(a) - errLine(b) })
	return c.errs
}

// syntaxError is a line that is not TOML; the parser's words say what it
// expected there.
func (c *configCheck) syntaxError(err error) error {
	line, what, ok := TOMLSyntax(err)
	if !ok {
		return c.line(1, "this is not a TOML file aipm can read: compare it with aipm config example")
	}
	return c.line(line, "this line is not valid TOML (%s): fix it; aipm config example shows the format", what)
}

// TOMLSyntax is the line of a TOML syntax error and what the parser
// expected there (a short phrase such as "expected value but found '\n'
// instead"); ok is false for an error that is not one (a decoded value of
// the wrong type: the caller says what it expected).
func TOMLSyntax(err error) (line int, what string, ok bool) {
	var pe toml.ParseError
	if !errors.As(err, &pe) {
		return 0, "", false
	}
	return pe.Position.Line, strings.TrimSuffix(pe.Message, "."), true
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// shape checks the values of one table of the config (raw, as TOML
// decodes it) against t, the struct aipm decodes it into. The table is
// section (dotted; "" for the top), entry index of an array of tables or
// -1, written at line (0: the top); a key the locator cannot find (in an
// inline table) is said at the table's line. Unknown keys are left to
// unknownKeys.
func (c *configCheck) shape(raw map[string]any, t reflect.Type, section string, index, line int) {
	for _, key := range slices.Sorted(maps.Keys(raw)) {
		if f, ok := tomlFieldOf(t, key); ok {
			c.value(raw[key], f.typ, tomlPlace{section, index, key, key, c.keyLine(section, index, key, line)})
		}
	}
}

// keyLine is the line of key in the table section (entry index), else
// line, the table's own, if it has one.
func (c *configCheck) keyLine(section string, index int, key string, line int) int {
	if line > 0 && !c.loc().has(section, index, key) {
		return line
	}
	return c.loc().find(section, index, key)
}

// tomlPlace is where a value is: its key in the table section (entry
// index, or -1), the name errors give it, and its line.
type tomlPlace struct {
	section   string
	index     int
	key, name string
	line      int
}

// value checks one value v (at p) against the Go type t it decodes into.
func (c *configCheck) value(v any, t reflect.Type, p tomlPlace) {
	wrong := func() { c.fail(p.line, "%s must be %s (got %s)", p.name, tomlKindOf(t), tomlValueText(v)) }
	sub := strings.TrimPrefix(p.section+"."+p.key, ".")
	switch {
	case reflect.PointerTo(t).Implements(textUnmarshaler):
		s, ok := v.(string)
		if !ok {
			wrong()
			return
		}
		if err := reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			c.fail(p.line, "%s: %v", p.name, err)
		}
	case t.Kind() == reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			wrong()
			return
		}
		c.shape(m, t, sub, -1, p.line)
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		entries, ok := v.([]map[string]any)
		if !ok {
			wrong()
			return
		}
		for i, m := range entries {
			c.shape(m, t.Elem(), sub, i, c.loc().Section(sub, i))
		}
	case t.Kind() == reflect.Slice:
		list, ok := v.([]any)
		if !ok || slices.ContainsFunc(list, func(e any) bool { return !tomlFits(e, t.Elem()) }) {
			wrong()
		}
	case t.Kind() == reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			wrong()
			return
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			e := m[k]
			c.value(e, t.Elem(), tomlPlace{sub, -1, k, p.name + "." + k, c.keyLine(sub, -1, k, p.line)})
		}
	default:
		if !tomlFits(v, t) {
			wrong()
		}
	}
}

// tomlFits says whether a TOML value v decodes into the plain Go type t
// (a string, a number, true or false, or a list of them).
func tomlFits(v any, t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String:
		_, ok := v.(string)
		return ok
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		_, ok := v.(int64)
		return ok
	case reflect.Float32, reflect.Float64:
		switch v.(type) {
		case int64, float64:
			return true
		}
	case reflect.Bool:
		_, ok := v.(bool)
		return ok
	case reflect.Slice:
		list, ok := v.([]any)
		return ok && !slices.ContainsFunc(list, func(e any) bool { return !tomlFits(e, t.Elem()) })
	}
	return false
}

// tomlKinder is a config type that says what its values look like.
type tomlKinder interface{ tomlKind() string }

// tomlKindOf says in words what a value decoded into t must be.
func tomlKindOf(t reflect.Type) string {
	if k, ok := reflect.New(t).Interface().(tomlKinder); ok {
		return k.tomlKind()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string in quotes"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Struct, reflect.Map:
		return "a table"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Struct {
			return "a list of tables"
		}
		if t.Elem().Kind() == reflect.String {
			return `a list of strings, such as ["a", "b"]`
		}
		return "a list of " + tomlKindOf(t.Elem())
	}
	return "another kind of value"
}

// tomlValueText says in words what a TOML value is.
func tomlValueText(v any) string {
	switch v := v.(type) {
	case string:
		return "a string " + fmt.Sprintf("%q", Clip(v, 40))
	case int64:
		return fmt.Sprintf("the number %d", v)
	case float64:
		return fmt.Sprintf("the number %v", v)
	case bool:
		return fmt.Sprint(v)
	case []any:
		if i := slices.IndexFunc(v, func(e any) bool { _, ok := e.(string); return !ok }); i >= 0 {
			return "a list holding " + tomlValueText(v[i])
		}
		return "a list"
	case []map[string]any:
		return "a list of tables"
	case map[string]any:
		return "a table"
	}
	return "a date or time"
}
