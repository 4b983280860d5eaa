package claude

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"

	"aipm/internal/clientconfig"
)

// Claude Code applies a project's .claude/settings.json (the
// permissions.allow that lets claude -p call aipm's tools without asking)
// only in a folder whose trust dialog the user accepted: elsewhere claude
// -p refuses every aipm tool. It records the answer in its global config,
// ~/.claude.json ($CLAUDE_CONFIG_DIR/.claude.json when that is set), as
// projects["<folder>"].hasTrustDialogAccepted, saved for the main git
// checkout's root (else the folder), and counts a folder trusted when that
// key or the folder or one of its parents has it.

// trust is why Claude Code will refuse aipm's tools in the
// project, or "" when the project has no aipm entry for it or Claude Code
// trusts it.
func trust(getenv func(string) string, project string) string {
	dirs := clientconfig.ProjectDirs(project)
	uses, err := usesClaude(dirs[0])
	if err != nil {
		return fmt.Sprintf("aipm cannot tell whether Claude Code uses aipm here: %v: fix it by hand", err)
	}
	if !uses {
		return ""
	}
	path := claudeConfigPath(getenv)
	data, missing, err := clientconfig.ReadUserFile(path)
	if err != nil {
		return fmt.Sprintf("aipm cannot tell whether Claude Code trusts this project: %v: fix it", err)
	}
	var cfg struct {
		Projects map[string]any `json:"projects"`
	}
	if !missing {
		if err := json.Unmarshal(data, &cfg); err != nil {
			return fmt.Sprintf("aipm cannot tell whether Claude Code trusts this project: %s is not valid JSON (%v): fix it", path, err)
		}
	}
	key := trustKey(clientconfig.Resolved(dirs))
	for _, k := range trustLookups(key, dirs) {
		if entry, ok := cfg.Projects[k].(map[string]any); ok && entry["hasTrustDialogAccepted"] == true {
			return ""
		}
	}
	why := fmt.Sprintf("%s has no projects[%q].hasTrustDialogAccepted = true", path, key)
	if missing {
		why = path + " does not exist"
	}
	return fmt.Sprintf("Claude Code applies .claude/settings.json's permissions only in a folder whose trust dialog was accepted, so claude -p refuses every aipm tool here (%s): run claude once in %s and accept the trust dialog, or start claude with --allowedTools mcp__aipm",
		why, key)
}

// usesClaude says whether the project's files hold an aipm entry for
// Claude Code: the aipm server in .mcp.json or its tools allowed in
// .claude/settings.json.
func usesClaude(project string) (bool, error) {
	var mcp struct {
		Servers map[string]json.RawMessage `json:"mcpServers"`
	}
	ok, err := readProjectJSON(project, mcpFile, &mcp)
	if err != nil || ok && mcp.Servers[clientconfig.ServerName] != nil {
		return err == nil, err
	}
	var settings struct {
		Permissions struct {
			Allow []string `json:"allow"`
		} `json:"permissions"`
	}
	ok, err = readProjectJSON(project, settingsFile, &settings)
	return ok && slices.Contains(settings.Permissions.Allow, "mcp__"+clientconfig.ServerName), err
}

// readProjectJSON decodes the project's file name into v; false when the
// file does not exist.
func readProjectJSON(project, name string, v any) (bool, error) {
	data, exists, err := clientconfig.ReadOptional(filepath.Join(project, name))
	if err != nil {
		return false, fmt.Errorf("%s cannot be read (%v)", name, clientconfig.PathReason(err))
	}
	if !exists {
		return false, nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("%s is not what Claude Code reads (%v)", name, err)
	}
	return true, nil
}

// claudeConfigPath is Claude Code's global config: .claude.json in
// $CLAUDE_CONFIG_DIR when that is set, else in $HOME.
func claudeConfigPath(getenv func(string) string) string {
	if dir := getenv("CLAUDE_CONFIG_DIR"); dir != "" {
		return filepath.Join(dir, ".claude.json")
	}
	return filepath.Join(getenv("HOME"), ".claude.json")
}

// trustKey is the key under which Claude Code saves the trust
// dialog's answer for a session started in dir: the main git checkout's
// root, else dir.
func trustKey(dir string) string {
	nearest, mainRoot := clientconfig.GitRoots(dir)
	switch {
	case mainRoot != "":
		return mainRoot
	case nearest != "":
		return nearest
	}
	return dir
}

// trustLookups are the keys Claude Code finds trust under for a
// session started in one of dirs: key, then each dir and its parents.
func trustLookups(key string, dirs []string) []string {
	keys := []string{key}
	for _, d := range dirs {
		for ; ; d = filepath.Dir(d) {
			keys = append(keys, d)
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return keys
}
