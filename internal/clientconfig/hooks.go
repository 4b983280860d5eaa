package clientconfig

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"aipm/internal/shell"
)

// HookHandler is one command a client runs at a hook event.
type HookHandler struct {
	Type        string `json:"type"`
	Command     string `json:"command"`
	Async       bool   `json:"async,omitempty"`
	AsyncRewake bool   `json:"asyncRewake,omitempty"`
	Timeout     int    `json:"timeout"`
}

// HookGroup is one entry of an event's list: the handlers run for the
// tools (or sources) its matcher selects.
type HookGroup struct {
	Matcher string        `json:"matcher,omitempty"`
	Hooks   []HookHandler `json:"hooks"`
}

// HookEvent is aipm's group for one event.
type HookEvent struct {
	Name  string
	Group HookGroup
}

// HookTimeout is how long (seconds) a client lets aipm hook answer.
const HookTimeout = 10

// shellSafe is a command word that needs no quoting in a hook's command,
// which clients run through a shell.
var shellSafe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_./+@%=:,-]+$`) })

// hookBinary is the lighter binary that runs aipm's hooks (cmd/aipm-hook).
const hookBinary = "aipm-hook"

// HookWord is the command word of aipm's hooks: aipm-hook, which starts
// in about a third of aipm's time, when it is on path (a PATH value) or
// beside aipm (command, the word AipmCommand chose, when it is a path);
// else command itself, which runs them as "aipm hook".
func HookWord(path, command string) string {
	if shell.LookPath(path, hookBinary) != "" {
		return hookBinary
	}
	if filepath.IsAbs(command) {
		beside := filepath.Join(filepath.Dir(command), hookBinary)
		if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return beside
		}
	}
	return command
}

// HookCommand is the shell command of aipm's hook for client: command is
// the word HookWord chose ("aipm-hook" or "aipm", or a binary's absolute
// path, quoted when it needs it).
func HookCommand(command, client string) string {
	sub := " hook"
	if filepath.Base(command) == hookBinary {
		sub = ""
	}
	if !shellSafe().MatchString(command) {
		command = "'" + strings.ReplaceAll(command, "'", `'\''`) + "'"
	}
	return command + sub + " --client " + client
}

// HooksDocument is {"hooks": {...}} holding events, in their order.
func HooksDocument(events []HookEvent) ([]byte, error) {
	var hooks JSONObject
	for _, ev := range events {
		raw, err := json.Marshal([]HookGroup{ev.Group})
		if err != nil {
			return nil, err
		}
		hooks.Set(ev.Name, raw)
	}
	raw, err := json.Marshal(hooks)
	if err != nil {
		return nil, err
	}
	return json.Marshal(JSONObject{{key: "hooks", value: raw}})
}

// HookEventNames are the events' names, for a sentence.
func HookEventNames(events []HookEvent) string {
	names := make([]string, len(events))
	for i, ev := range events {
		names[i] = ev.Name
	}
	return strings.Join(names, ", ")
}

// firstShellWord splits a shell command into its first word (unquoted)
// and the rest (leading blanks trimmed). It knows '…', "…" and \x, which
// is all a hook's command word needs.
func firstShellWord(s string) (string, string) {
	s = strings.TrimLeft(s, " \t")
	var w strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t':
			return w.String(), strings.TrimLeft(s[i:], " \t")
		case '\'', '"':
			end := strings.IndexByte(s[i+1:], c)
			if end < 0 {
				return w.String() + s[i+1:], ""
			}
			w.WriteString(s[i+1 : i+1+end])
			i += end + 1
		case '\\':
			if i+1 < len(s) {
				i++
				w.WriteByte(s[i])
			}
		default:
			w.WriteByte(c)
		}
	}
	return w.String(), ""
}

// IsAipmHook says whether a hook's command is aipm's own: "aipm hook …"
// or "aipm-hook …", the command word plain or an absolute path.
func IsAipmHook(command string) bool {
	word, rest := firstShellWord(command)
	if filepath.IsAbs(word) {
		word = filepath.Base(word)
	} else if strings.Contains(word, "/") {
		return false
	}
	switch word {
	case hookBinary:
		return true
	case ServerName:
		return rest == "hook" || strings.HasPrefix(rest, "hook ")
	}
	return false
}

// MergeHooks merges events into root's "hooks" object: in each event's
// list, the first group holding an aipm hook is replaced by aipm's group,
// aipm's hooks elsewhere in the list are removed (a group left with only
// other hooks keeps them), and everything else stays as it is; an event
// without aipm's hooks gets aipm's group appended. It says what it did,
// or "" when root already held exactly aipm's hooks.
func MergeHooks(root *JSONObject, events []HookEvent) (string, error) {
	hooks, err := SubObject(*root, "hooks")
	if err != nil {
		return "", err
	}
	changed, replaced := false, false
	for _, ev := range events {
		old, had := hooks.Get(ev.Name)
		var groups []json.RawMessage
		if had {
			if err := json.Unmarshal(old, &groups); err != nil {
				return "", fmt.Errorf("its hooks.%s is not a list", ev.Name)
			}
		}
		merged, found, err := mergeHookGroups(groups, ev.Group)
		if err != nil {
			return "", err
		}
		replaced = replaced || found
		if had && SameJSON(old, merged) {
			continue
		}
		hooks.Set(ev.Name, merged)
		changed = true
	}
	if !changed {
		return "", nil
	}
	raw, err := json.Marshal(hooks)
	if err != nil {
		return "", err
	}
	root.Set("hooks", raw)
	if replaced {
		return "rewrote aipm's hooks (" + HookEventNames(events) + ")", nil
	}
	return "added aipm's hooks (" + HookEventNames(events) + ")", nil
}

// mergeHookGroups puts want in groups where the first aipm hook stood
// (or at the end), and drops aipm's hooks from the other groups. found
// says whether groups held an aipm hook.
func mergeHookGroups(groups []json.RawMessage, want HookGroup) (json.RawMessage, bool, error) {
	wantRaw, err := json.Marshal(want)
	if err != nil {
		return nil, false, err
	}
	var out []json.RawMessage
	found := false
	for _, g := range groups {
		obj, err := ParseObject(g)
		var handlers []json.RawMessage
		if err == nil {
			raw, _ := obj.Get("hooks")
			err = json.Unmarshal(raw, &handlers)
		}
		others := withoutAipmHooks(handlers)
		if err != nil || len(others) == len(handlers) {
			out = append(out, g) // not a group aipm can read, or none of aipm's hooks: kept as is
			continue
		}
		if !found {
			out = append(out, wantRaw)
			found = true
		}
		if len(others) > 0 {
			raw, err := json.Marshal(others)
			if err != nil {
				return nil, false, err
			}
			obj.Set("hooks", raw)
			if g, err = json.Marshal(obj); err != nil {
				return nil, false, err
			}
			out = append(out, g)
		}
	}
	if !found {
		out = append(out, wantRaw)
	}
	merged, err := json.Marshal(out)
	return merged, found, err
}

// withoutAipmHooks is handlers without aipm's own.
func withoutAipmHooks(handlers []json.RawMessage) []json.RawMessage {
	others := []json.RawMessage{}
	for _, h := range handlers {
		var c struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(h, &c) == nil && IsAipmHook(c.Command) {
			continue
		}
		others = append(others, h)
	}
	return others
}
