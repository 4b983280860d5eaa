package clientconfig

import (
	"aipm/fsstore"
	"aipm/internal/lockedfile"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
)

// The files mcp-config --write merges into, relative to the project.
var (
	claudeMCPFile      = ".mcp.json"
	claudeSettingsFile = filepath.Join(".claude", "settings.json")
	codexConfigFile    = filepath.Join(".codex", "config.toml")
)

// jsonObject is a JSON object that keeps its members' order, so that a
// merge changes only the members it sets.
type jsonObject []jsonMember

type jsonMember struct {
	key   string
	value json.RawMessage
}

// jsonError is why data is not the JSON it should be, with its line.
func jsonError(data []byte, err error) error {
	return fmt.Errorf("it is not valid JSON at line %d: %s", lockedfile.JSONLine(data, err), lockedfile.JSONWords(data, err))
}

// parseObject decodes one JSON object; empty input is an empty object.
func parseObject(data []byte) (jsonObject, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return jsonObject{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("it is not a JSON object")
	}
	var o jsonObject
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

func (o jsonObject) get(key string) (json.RawMessage, bool) {
	for _, m := range o {
		if m.key == key {
			return m.value, true
		}
	}
	return nil, false
}

func (o *jsonObject) set(key string, v json.RawMessage) {
	for i, m := range *o {
		if m.key == key {
			(*o)[i].value = v
			return
		}
	}
	*o = append(*o, jsonMember{key: key, value: v})
}

func (o jsonObject) MarshalJSON() ([]byte, error) {
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

// indented is v as a file: two-space indentation and a final newline.
func indented(v any) ([]byte, error) {
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

// sameJSON says whether a and b hold the same value.
func sameJSON(a, b []byte) bool {
	var va, vb any
	return json.Unmarshal(a, &va) == nil && json.Unmarshal(b, &vb) == nil && reflect.DeepEqual(va, vb)
}

// subObject is the object at key of o (empty when absent).
func subObject(o jsonObject, key string) (jsonObject, error) {
	raw, ok := o.get(key)
	if !ok {
		return jsonObject{}, nil
	}
	sub, err := parseObject(raw)
	if err != nil || (len(sub) == 0 && !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{"))) {
		return nil, fmt.Errorf("its %q is not a JSON object", key)
	}
	return sub, nil
}

// mergeJSONFile reads the JSON object at the project's file name and
// lets merge change it: the change holds the file's new content when
// merge reports a change. It writes nothing (writeChanges does).
func mergeJSONFile(project, name string, merge func(*jsonObject) (string, error)) (FileChange, error) {
	c, data, err := readTarget(project, name)
	if err != nil {
		return FileChange{}, err
	}
	root, err := parseObject(data)
	if err != nil {
		return FileChange{}, fmt.Errorf("%s cannot be merged into: %v: fix it by hand, or move it away and run mcp-config again", name, err)
	}
	if c.what, err = merge(&root); err != nil {
		return FileChange{}, fmt.Errorf("%s cannot be merged into: %v: fix it by hand", name, err)
	}
	if c.what != "" {
		c.data, err = indented(root)
	}
	return c, err
}

// wholeFile is the change that makes the project's file name hold data,
// a file aipm owns whole (what names it in --write's report).
func wholeFile(project, name string, data []byte, what string) (FileChange, error) {
	c, old, err := readTarget(project, name)
	if err != nil || (!c.created && bytes.Equal(old, data)) {
		return c, err
	}
	c.data = data
	c.what = map[bool]string{true: "wrote ", false: "rewrote "}[c.created] + what
	return c, nil
}

// readTarget reads the project's file name, which --write is to change:
// a missing one is empty and will be created.
func readTarget(project, name string) (FileChange, []byte, error) {
	path := filepath.Join(project, name)
	data, exists, err := readOptional(path)
	if err != nil {
		return FileChange{}, nil, fmt.Errorf("%s cannot be read (%v), so no file was changed: fix it or move it away, then run mcp-config again", name, pathReason(err))
	}
	c := FileChange{path: path, name: name, created: !exists}
	if exists {
		c.old = data
	}
	return c, data, nil
}

// ClaudeWrite merges aipm's server into .mcp.json and enables it in
// .claude/settings.json (the new contents; writeChanges writes them).
func ClaudeWrite(project string, s Server) ([]FileChange, error) {
	entry, err := json.Marshal(claudeServer(s))
	if err != nil {
		return nil, err
	}
	mcp, err := mergeJSONFile(project, claudeMCPFile, func(root *jsonObject) (string, error) {
		servers, err := subObject(*root, "mcpServers")
		if err != nil {
			return "", err
		}
		old, had := servers.get(ServerName)
		if had && sameJSON(old, entry) {
			return "", nil
		}
		servers.set(ServerName, entry)
		raw, err := json.Marshal(servers)
		root.set("mcpServers", raw)
		if had {
			return "replaced the aipm server's entry", err
		}
		return "added the aipm server", err
	})
	if err != nil {
		return nil, err
	}
	settings, err := mergeJSONFile(project, claudeSettingsFile, func(root *jsonObject) (string, error) {
		return mergeClaudeSettings(root, s.HookCommand)
	})
	return []FileChange{mcp, settings}, err
}

// mergeClaudeSettings adds "aipm" to enabledMcpjsonServers,
// "mcp__aipm" to permissions.allow and aipm's hooks (run by command) to
// hooks, keeping everything else.
func mergeClaudeSettings(root *jsonObject, command string) (string, error) {
	var done []string
	added, err := addToList(root, "enabledMcpjsonServers", ServerName)
	if err != nil {
		return "", err
	}
	if added {
		done = append(done, "enabled the aipm server (enabledMcpjsonServers)")
	}
	perms, err := subObject(*root, "permissions")
	if err != nil {
		return "", err
	}
	added, err = addToList(&perms, "allow", "mcp__"+ServerName)
	if err != nil {
		return "", err
	}
	if added {
		raw, err := json.Marshal(perms)
		if err != nil {
			return "", err
		}
		root.set("permissions", raw)
		done = append(done, "allowed its tools (permissions.allow: mcp__aipm)")
	}
	if command == "" { // a remote entry: no hooks
		return joinAnd(done), nil
	}
	what, err := mergeHooks(root, ClaudeHookEvents(command))
	if err != nil {
		return "", err
	}
	if what != "" {
		done = append(done, what)
	}
	return joinAnd(done), nil
}

// joinAnd joins clauses as "a, b and c".
func joinAnd(clauses []string) string {
	if len(clauses) < 2 {
		return strings.Join(clauses, "")
	}
	return strings.Join(clauses[:len(clauses)-1], ", ") + " and " + clauses[len(clauses)-1]
}

// addToList appends item to the string array at key unless it holds it.
func addToList(o *jsonObject, key, item string) (bool, error) {
	var list []string
	if raw, ok := o.get(key); ok {
		if err := json.Unmarshal(raw, &list); err != nil {
			return false, fmt.Errorf("its %q is not a list of strings", key)
		}
	}
	if slices.Contains(list, item) {
		return false, nil
	}
	raw, err := json.Marshal(append(list, item))
	o.set(key, raw)
	return true, err
}

// codexHeader matches a TOML table header: [a.b] or [[a.b]].
var codexHeader = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*\[\[?\s*([^\]]*?)\s*\]\]?\s*(#.*)?$`) })

// CodexWrite merges the [mcp_servers.aipm] table into the project's
// .codex/config.toml and aipm's hooks into its .codex/hooks.json (the new
// contents; writeChanges writes them).
func CodexWrite(project string, s Server) ([]FileChange, error) {
	config, err := codexWriteConfig(project, s)
	if err != nil || s.HookCommand == "" { // a remote entry: no hooks
		return []FileChange{config}, err
	}
	hooks, err := codexWriteHooks(project, s.HookCommand)
	if err != nil {
		return nil, err
	}
	return []FileChange{config, hooks}, nil
}

// codexWriteConfig merges the [mcp_servers.aipm] table into the project's
// .codex/config.toml: aipm's own tables are replaced where they stand,
// every other line (tables, keys, comments) stays as it is.
func codexWriteConfig(project string, s Server) (FileChange, error) {
	c, data, err := readTarget(project, codexConfigFile)
	if err != nil {
		return FileChange{}, err
	}
	table, err := codexTable(s)
	if err != nil {
		return FileChange{}, err
	}
	var have, want struct {
		Servers map[string]any `toml:"mcp_servers"`
	}
	if _, err := toml.Decode(string(data), &have); err != nil {
		if line, what, ok := fsstore.TOMLSyntax(err); ok {
			return FileChange{}, fmt.Errorf("%s is not valid TOML at line %d (%s): fix it by hand, then run mcp-config again", codexConfigFile, line, what)
		}
		return FileChange{}, fmt.Errorf("%s has an mcp_servers that is not a table of servers: fix it by hand, then run mcp-config again", codexConfigFile)
	}
	if _, err := toml.Decode(string(table), &want); err != nil {
		return FileChange{}, err
	}
	old, had := have.Servers[ServerName]
	if had && reflect.DeepEqual(old, want.Servers[ServerName]) {
		return c, nil
	}
	out := spliceCodexTable(string(data), string(table))
	var check map[string]any
	if _, err := toml.Decode(out, &check); err != nil {
		return FileChange{}, fmt.Errorf("%s defines the aipm server in a form mcp-config cannot replace: remove its mcp_servers.aipm entry by hand and run mcp-config again", codexConfigFile)
	}
	c.what = "added the [mcp_servers.aipm] table"
	if had {
		c.what = "replaced the [mcp_servers.aipm] table"
	}
	c.data = []byte(out)
	return c, nil
}

// codexWriteHooks merges aipm's hooks into the project's .codex/hooks.json.
func codexWriteHooks(project, command string) (FileChange, error) {
	c, err := mergeJSONFile(project, CodexHooksFile, func(root *jsonObject) (string, error) {
		return mergeHooks(root, CodexHookEvents(command))
	})
	if c.what != "" {
		c.what += ", which Codex runs only once trusted (/hooks in codex) and else skips silently"
	}
	return c, err
}

// spliceCodexTable replaces the tables [mcp_servers.aipm] and
// [mcp_servers.aipm.*] of doc with table, at the place of the first, or
// appends table. The comments and blank lines just before the next
// table's header stay with that table.
func spliceCodexTable(doc, table string) string {
	lines := strings.SplitAfter(doc, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var out []string
	at := -1
	for i := 0; i < len(lines); {
		if !isAipmHeader(lines[i]) {
			out = append(out, lines[i])
			i++
			continue
		}
		end := i + 1
		for end < len(lines) && !codexHeader().MatchString(lines[end]) {
			end++
		}
		keep := end
		for keep > i+1 && isCommentOrBlank(lines[keep-1]) && end < len(lines) {
			keep--
		}
		if at < 0 {
			at = len(out)
		}
		out = append(out, lines[keep:end]...)
		i = end
	}
	if at < 0 {
		if len(out) > 0 {
			if last := out[len(out)-1]; !strings.HasSuffix(last, "\n") {
				out[len(out)-1] = last + "\n"
			}
			if strings.TrimSpace(out[len(out)-1]) != "" {
				out = append(out, "\n")
			}
		}
		return strings.Join(out, "") + table
	}
	rest := out[at:]
	for len(rest) > 0 && strings.TrimSpace(rest[0]) == "" {
		rest = rest[1:]
	}
	if len(rest) > 0 {
		table += "\n"
	}
	return strings.Join(out[:at], "") + table + strings.Join(rest, "")
}

func isAipmHeader(line string) bool {
	m := codexHeader().FindStringSubmatch(line)
	if m == nil {
		return false
	}
	name := strings.ReplaceAll(m[1], " ", "")
	return name == "mcp_servers."+ServerName || strings.HasPrefix(name, "mcp_servers."+ServerName+".")
}

func isCommentOrBlank(line string) bool {
	t := strings.TrimSpace(line)
	return t == "" || strings.HasPrefix(t, "#")
}
