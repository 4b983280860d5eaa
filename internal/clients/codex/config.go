package codex

import (
	"bytes"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"

	"aipm/fsstore"
	"aipm/internal/clientconfig"
)

// configFile is where Codex reads a project's config (in a trusted
// project).
var configFile = filepath.Join(".codex", "config.toml")

// codexTable is the [mcp_servers.aipm] table (and its env subtable) for
// Codex CLI's config.toml.
func codexTable(s clientconfig.Server) ([]byte, error) {
	var buf bytes.Buffer
	if s.Env == nil && !s.Remote {
		s.EnvVars = clientconfig.CredentialVars
	}
	env := s.Env
	s.Env = nil
	buf.WriteString("[mcp_servers." + clientconfig.ServerName + "]\n")
	if err := toml.NewEncoder(&buf).Encode(s); err != nil {
		return nil, err
	}
	if env != nil {
		buf.WriteString("\n[mcp_servers." + clientconfig.ServerName + ".env]\n")
		if err := toml.NewEncoder(&buf).Encode(env); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// configDoc is the TOML document for Codex: the table alone.
func configDoc(s clientconfig.Server) ([]byte, error) { return codexTable(s) }

// note is what mcp-config says of Codex's table on stderr.
func note(s clientconfig.Server) string {
	var b strings.Builder
	b.WriteString("aipm: stdout is aipm's table for the project's .codex/config.toml (Codex reads it in a trusted\n" +
		"project) or ~/.codex/config.toml; aipm mcp-config codex --write merges it into .codex/config.toml,\n" +
		"and aipm's hooks (" + clientconfig.HookCommand(s.HookCommand, "codex") + " on " + clientconfig.HookEventNames(hookEvents(s.HookCommand)) + ")\n" +
		"into .codex/hooks.json. Codex runs a project's hooks only once trusted (/hooks in codex), else\n" +
		"skips them silently; aipm doctor says whether they are.\n")
	if s.Env == nil {
		b.WriteString("Codex passes AIPM_AGENT_ID and AIPM_PASSKEY_FILE from its environment to aipm serve, so the\n" +
			"passkey never reaches the model: AIPM_AGENT_ID=coder AIPM_PASSKEY_FILE=$HOME/.config/aipm/coder.key codex\n")
	} else {
		b.WriteString("This entry is for agent " + s.Env[fsstore.EnvAgentID] + " only.\n")
	}
	return b.String()
}

// codexHeader matches a TOML table header: [a.b] or [[a.b]].
var codexHeader = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*\[\[?\s*([^\]]*?)\s*\]\]?\s*(#.*)?$`) })

// writeFiles merges the [mcp_servers.aipm] table into the project's
// .codex/config.toml and aipm's hooks into its .codex/hooks.json (the new
// contents; clientconfig.Write writes them).
func writeFiles(project string, s clientconfig.Server) ([]clientconfig.FileChange, error) {
	config, err := writeConfig(project, s)
	if err != nil || s.HookCommand == "" { // a remote entry: no hooks
		return []clientconfig.FileChange{config}, err
	}
	hooks, err := writeHooks(project, s.HookCommand)
	if err != nil {
		return nil, err
	}
	return []clientconfig.FileChange{config, hooks}, nil
}

// writeConfig merges the [mcp_servers.aipm] table into the project's
// .codex/config.toml: aipm's own tables are replaced where they stand,
// every other line (tables, keys, comments) stays as it is.
func writeConfig(project string, s clientconfig.Server) (clientconfig.FileChange, error) {
	c, data, err := clientconfig.ReadTarget(project, configFile)
	if err != nil {
		return clientconfig.FileChange{}, err
	}
	table, err := codexTable(s)
	if err != nil {
		return clientconfig.FileChange{}, err
	}
	var have, want struct {
		Servers map[string]any `toml:"mcp_servers"`
	}
	if _, err := toml.Decode(string(data), &have); err != nil {
		if line, what, ok := fsstore.TOMLSyntax(err); ok {
			return clientconfig.FileChange{}, fmt.Errorf("%s is not valid TOML at line %d (%s): fix it by hand, then run mcp-config again", configFile, line, what)
		}
		return clientconfig.FileChange{}, fmt.Errorf("%s has an mcp_servers that is not a table of servers: fix it by hand, then run mcp-config again", configFile)
	}
	if _, err := toml.Decode(string(table), &want); err != nil {
		return clientconfig.FileChange{}, err
	}
	old, had := have.Servers[clientconfig.ServerName]
	if had && reflect.DeepEqual(old, want.Servers[clientconfig.ServerName]) {
		return c, nil
	}
	out := spliceCodexTable(string(data), string(table))
	var check map[string]any
	if _, err := toml.Decode(out, &check); err != nil {
		return clientconfig.FileChange{}, fmt.Errorf("%s defines the aipm server in a form mcp-config cannot replace: remove its mcp_servers.aipm entry by hand and run mcp-config again", configFile)
	}
	what := "added the [mcp_servers.aipm] table"
	if had {
		what = "replaced the [mcp_servers.aipm] table"
	}
	c.Change(what, []byte(out))
	return c, nil
}

// writeHooks merges aipm's hooks into the project's .codex/hooks.json.
func writeHooks(project, command string) (clientconfig.FileChange, error) {
	return clientconfig.MergeJSONFile(project, hooksFile, func(root *clientconfig.JSONObject) (string, error) {
		what, err := clientconfig.MergeHooks(root, hookEvents(command))
		if what != "" {
			what += ", which Codex runs only once trusted (/hooks in codex) and else skips silently"
		}
		return what, err
	})
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
	return name == "mcp_servers."+clientconfig.ServerName || strings.HasPrefix(name, "mcp_servers."+clientconfig.ServerName+".")
}

func isCommentOrBlank(line string) bool {
	t := strings.TrimSpace(line)
	return t == "" || strings.HasPrefix(t, "#")
}

// hooksFile is where Codex reads a project's hooks (in a trusted
// project, each hook trusted with /hooks).
var hooksFile = filepath.Join(".codex", "hooks.json")

// hookEvents are aipm's hooks for the project's .codex/hooks.json.
func hookEvents(command string) []clientconfig.HookEvent {
	one := []clientconfig.HookHandler{{Type: "command", Command: clientconfig.HookCommand(command, "codex"), Timeout: clientconfig.HookTimeout}}
	return []clientconfig.HookEvent{
		{Name: "SessionStart", Group: clientconfig.HookGroup{Matcher: "startup|resume|clear", Hooks: one}},
		{Name: "UserPromptSubmit", Group: clientconfig.HookGroup{Hooks: one}},
		{Name: "PreToolUse", Group: clientconfig.HookGroup{Matcher: "*", Hooks: one}},
		{Name: "PostToolUse", Group: clientconfig.HookGroup{Matcher: "*", Hooks: one}},
		{Name: "Stop", Group: clientconfig.HookGroup{Hooks: one}},
	}
}

// urlDoc is Codex's config.toml table for aipm serve --http at raw,
// its bearer token in the variable tokenVar.
func urlDoc(raw, tokenVar string) ([]byte, error) {
	var buf bytes.Buffer
	entry := map[string]any{"url": raw, "bearer_token_env_var": tokenVar, "tool_timeout_sec": 60, "default_tools_approval_mode": "approve"}
	if err := toml.NewEncoder(&buf).Encode(map[string]map[string]any{"mcp_servers": {clientconfig.ServerName: entry}}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
