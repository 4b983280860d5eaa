package fsstore

import (
	"aipm/fsstore/internal/storage"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// AgentChange is one change to an agent's [[agents]] entry (aipm agent
// set): each field that is not nil replaces the value; "" (an empty
// command) removes the key.
type AgentChange struct {
	Name, Type, Role, Parent *string
	Command                  *[]string
}

// AgentKeys are the keys of an [[agents]] entry an AgentChange may set, in
// the order the entry is written.
var AgentKeys = []string{"name", "type", "role", "parent", "command"}

// apply returns a with ch applied.
func (ch AgentChange) apply(a storage.Agent) storage.Agent {
	for _, f := range []struct{ to, from *string }{{&a.Name, ch.Name}, {&a.Type, ch.Type}, {&a.Role, ch.Role}, {&a.Parent, ch.Parent}} {
		if f.from != nil {
			*f.to = *f.from
		}
	}
	if ch.Role != nil && *ch.Role == "" {
		a.Role = storage.RoleWorker // what a missing role means
	}
	if ch.Command != nil {
		a.Command = slices.Clone(*ch.Command)
		if len(a.Command) == 0 {
			a.Command = nil
		}
	}
	return a
}

// AgentValue is the value of key (one of AgentKeys) in a: a string, or
// the command as a []string.
func AgentValue(a storage.Agent, key string) any {
	switch key {
	case "name":
		return a.Name
	case "type":
		return a.Type
	case "role":
		return a.Role
	case "parent":
		return a.Parent
	}
	return a.Command
}

// SetAgent applies ch to agent id's [[agents]] entry of config.toml as text,
// through EditConfig: only the lines of the keys whose value changes are
// replaced, added or removed; comments and the rest of the file are kept
// byte for byte. It refuses (ErrInvalid) a value ParseConfig would refuse
// in the result, and a parent that makes the agent its own ancestor; the
// result is parsed again and compared with the change before it is
// written. An AI agent made a human loses its passkey hash, and is
// refused (ErrInUse) while it has a live session; a human made an AI
// agent has no passkey yet (aipm agent passkey issues one). It returns
// the entry before and after; they are equal when nothing changed, and
// then nothing was written.
func (s *Store) SetAgent(ctx context.Context, id string, ch AgentChange) (before, after storage.Agent, err error) {
	err = s.EditConfig(ctx, func(old []byte, cfg *storage.Config) ([]byte, error) {
		index := slices.IndexFunc(cfg.Agents, func(a storage.Agent) bool { return a.ID == id })
		if index < 0 {
			return nil, storage.CheckAgentRef(cfg, id, "agent")
		}
		before = cfg.Agents[index]
		after = ch.apply(before)
		if reflect.DeepEqual(before, after) {
			return nil, nil // nothing to write
		}
		if err := s.checkAgentChange(cfg, before, after); err != nil {
			return nil, err
		}
		return setAgentEntry(old, cfg, index, after)
	})
	if err != nil {
		return before, before, err
	}
	if before.Type == storage.AgentAI && after.Type == storage.AgentHuman {
		if path, err := s.files.PasskeyPath(id); err == nil {
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return before, after, fmt.Errorf("agent %q is a human now, but its passkey hash was not removed: %w", id, err)
			}
		}
	}
	return before, after, nil
}

// checkAgentChange says why after may not replace before in cfg, in words
// that name the value, before the text is touched (ParseConfig checks the
// result again).
func (s *Store) checkAgentChange(cfg *storage.Config, before, after storage.Agent) error {
	id := after.ID
	if err := storage.CheckEnum("type", after.Type, []string{storage.AgentAI, storage.AgentHuman}); err != nil {
		return storage.Kindf(storage.ErrInvalid, "%v", err)
	}
	if err := storage.CheckEnum("role", after.Role, []string{storage.RoleWorker, storage.RoleManager}); err != nil {
		return storage.Kindf(storage.ErrInvalid, "%v", err)
	}
	if after.Type == storage.AgentHuman && len(after.Command) > 0 {
		return storage.Kindf(storage.ErrInvalid, "agent %q would be a human with a command: humans act through the CLI, so remove the command too (--command \"\")", id)
	}
	if err := parentCycle(cfg, id, after.Parent); err != nil {
		return err
	}
	if before.Type == storage.AgentAI && after.Type == storage.AgentHuman {
		live, err := s.LiveSessions(time.Now())
		if err != nil {
			return err
		}
		live = slices.DeleteFunc(live, func(ses Session) bool { return ses.Agent != id })
		if len(live) > 0 {
			return storage.Kindf(ErrInUse, "agent %q has %s: it becomes a human only when no session of it is live (a session ends at logout or when it is idle)", id, inUse(nil, live))
		}
	}
	return nil
}

// parentCycle refuses parent for agent id when it is not an agent of cfg,
// is id itself, or answers to id already (a cycle of parents).
func parentCycle(cfg *storage.Config, id, parent string) error {
	if parent == "" {
		return nil
	}
	if parent == id {
		return storage.Kindf(storage.ErrInvalid, "agent %q cannot be its own parent", id)
	}
	if _, ok := cfg.Agent(parent); !ok {
		return storage.Kindf(storage.ErrInvalid, "parent %q is not an agent of this project: see aipm agent list", storage.Clip(parent, storage.MaxEchoedID))
	}
	chain := []string{parent}
	for a, ok := cfg.Agent(parent); ok && a.Parent != "" && !slices.Contains(chain, a.Parent); a, ok = cfg.Agent(a.Parent) {
		chain = append(chain, a.Parent)
		if a.Parent == id {
			return storage.Kindf(storage.ErrInvalid, "agent %q cannot answer to %q: %q already answers to %q (%s), and parents must not form a cycle", id, parent, parent, id, strings.Join(chain, " → "))
		}
	}
	return nil
}

// setAgentEntry returns data with the [[agents]] entry at index holding
// after's values: each changed key's line (a multi-line array whole) is
// replaced, removed when the value is empty, or added after the entry's
// last key. The result must parse to cfg with that one entry replaced;
// what cannot be edited so is refused, to be edited by hand.
func setAgentEntry(data []byte, cfg *storage.Config, index int, after storage.Agent) ([]byte, error) {
	before := cfg.Agents[index]
	out := data
	for _, key := range AgentKeys {
		v := AgentValue(after, key)
		if reflect.DeepEqual(AgentValue(before, key), v) {
			continue
		}
		var err error
		if out, err = setEntryKey(out, index, key, v); err != nil {
			return nil, fmt.Errorf("cannot change %s of agent %q in the config: %w; edit it by hand", key, after.ID, err)
		}
	}
	want := *cfg
	want.Agents = slices.Clone(cfg.Agents)
	want.Agents[index] = after
	got, err := storage.ParseConfig("config.toml", out)
	if err != nil {
		var le *storage.LineError
		if errors.As(err, &le) {
			err = le.Err // a line of the new text, which is not in any file
		}
		return nil, storage.Kindf(storage.ErrInvalid, "agent %q cannot be changed so: %v", after.ID, err)
	}
	if !reflect.DeepEqual(*got, want) {
		return nil, fmt.Errorf("cannot change the [[agents]] entry of %q in the config as text (its layout is unusual): edit it by hand", after.ID)
	}
	return out, nil
}

// setEntryKey sets key to v (nil, "" or an empty command: remove it) in
// the main table of the [[agents]] entry at index.
func setEntryKey(data []byte, index int, key string, v any) ([]byte, error) {
	lines := bytes.SplitAfter(data, []byte("\n"))
	start := storage.NewLocator(data).Section("agents", index) // 1-based header line
	if start < 1 || start > len(lines) || storage.ArrayHeader().FindSubmatch(lines[start-1]) == nil {
		return nil, errors.New("its [[agents]] entry was not found")
	}
	end := start // index of the first line after the entry's own keys
	for ; end < len(lines); end++ {
		if storage.ArrayHeader().Match(lines[end]) || storage.TableHeader().Match(lines[end]) {
			break
		}
	}
	at, last, insert := -1, -1, start // at..last: key's lines; insert: after the entry's last value
	for i := start; i < end; i++ {
		m := storage.KeyLine().FindSubmatch(lines[i])
		if m == nil {
			continue
		}
		j, err := valueEnd(lines, i, end)
		if err != nil {
			return nil, err
		}
		if string(m[1]) == key {
			at, last = i, j
		}
		insert, i = j+1, j
	}
	var line []byte
	if !isEmptyValue(v) {
		var b bytes.Buffer
		if err := toml.NewEncoder(&b).Encode(map[string]any{key: v}); err != nil {
			return nil, err
		}
		line = b.Bytes()
	}
	var out [][]byte
	switch {
	case at >= 0:
		if line != nil {
			line = keepLayout(line, lines[at], at == last)
		}
		out = append(append(slices.Clone(lines[:at]), line), lines[last+1:]...)
	case line == nil:
		return data, nil // nothing to remove
	default:
		if insert > 0 && !bytes.HasSuffix(lines[insert-1], []byte("\n")) {
			line = append([]byte("\n"), line...)
		}
		out = append(append(slices.Clone(lines[:insert]), line), lines[insert:]...)
	}
	return bytes.Join(out, nil), nil
}

// keepLayout gives the new line of a key the indentation of the old one
// and, when the old value was on one line, the comment that ended it.
func keepLayout(line, old []byte, oneLine bool) []byte {
	indent := old[:len(old)-len(bytes.TrimLeft(old, " \t"))]
	out := append(slices.Clone(indent), line...)
	eq := bytes.IndexByte(old, '=') + 1
	if _, at, _ := bracketDepth(old[eq:], 0); at >= 0 && oneLine {
		comment := bytes.TrimRight(old[eq+at:], "\r\n")
		out = append(append(bytes.TrimRight(out, "\n"), ' '), comment...)
		out = append(out, '\n')
	}
	return out
}

func isEmptyValue(v any) bool {
	switch v := v.(type) {
	case string:
		return v == ""
	case []string:
		return len(v) == 0
	}
	return v == nil
}

// valueEnd is the index of the last line of the value that starts on line
// i (a key = value line): the line where its brackets close, outside
// strings and comments. A multi-line string is refused.
func valueEnd(lines [][]byte, i, end int) (int, error) {
	depth := 0
	for j := i; j < end; j++ {
		line := lines[j]
		if j == i {
			line = line[bytes.IndexByte(line, '=')+1:]
		}
		var err error
		if depth, _, err = bracketDepth(line, depth); err != nil {
			return 0, err
		}
		if depth <= 0 {
			return j, nil
		}
	}
	return 0, errors.New("a value does not end where the entry does")
}

// bracketDepth adds the brackets opened and closed on line to depth,
// skipping strings, and says where a comment starts (-1: none).
func bracketDepth(line []byte, depth int) (int, int, error) {
	if bytes.Contains(line, []byte(`"""`)) || bytes.Contains(line, []byte(`'''`)) {
		return 0, -1, errors.New("a multi-line string is not edited")
	}
	var quote byte
	for k := 0; k < len(line); k++ {
		c := line[k]
		switch {
		case quote == '"' && c == '\\':
			k++ // an escaped character
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#':
			return depth, k, nil
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		}
	}
	return depth, -1, nil
}
