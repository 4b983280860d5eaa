package gemini

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"aipm/internal/clientconfig"
)

// Gemini CLI reads a project's .gemini/settings.json only in a folder the
// user trusts: its trustedFolders.json ($GEMINI_CLI_TRUSTED_FOLDERS_PATH,
// else ~/.gemini/trustedFolders.json, the home being $GEMINI_CLI_HOME when
// set) maps a folder to TRUST_FOLDER (it and below), TRUST_PARENT (its
// parent and below) or DO_NOT_TRUST; the longest rule that holds the
// project decides. gemini -p in a folder with no rule exits 55;
// GEMINI_CLI_TRUST_WORKSPACE=true trusts it for that run.

// trustedFoldersPath is where Gemini CLI records trusted folders.
func trustedFoldersPath(getenv func(string) string) string {
	if p := getenv("GEMINI_CLI_TRUSTED_FOLDERS_PATH"); p != "" {
		return p
	}
	home := getenv("GEMINI_CLI_HOME")
	if home == "" {
		home = getenv("HOME")
	}
	return filepath.Join(home, ".gemini", "trustedFolders.json")
}

// trustedBy says whether Gemini CLI trusts dir by the rules at path:
// trusted, or why not (a sentence's clause).
func trustedBy(path, dir string) (trusted bool, why string, err error) {
	data, missing, err := clientconfig.ReadUserFile(path)
	if err != nil {
		return false, "", err
	}
	if missing {
		return false, path + " does not exist", nil
	}
	var rules map[string]string
	if err := json.Unmarshal(data, &rules); err != nil {
		return false, "", fmt.Errorf("%s is not valid JSON (%v)", path, err)
	}
	best, level := -1, ""
	for rule, l := range rules {
		base := rule
		if l == "TRUST_PARENT" {
			base = filepath.Dir(rule)
		}
		if resolvedBase, err := filepath.EvalSymlinks(base); err == nil {
			base = resolvedBase
		}
		if (dir == base || strings.HasPrefix(dir, strings.TrimSuffix(base, string(filepath.Separator))+string(filepath.Separator))) && len(rule) > best {
			best, level = len(rule), l
		}
	}
	switch level {
	case "TRUST_FOLDER", "TRUST_PARENT":
		return true, "", nil
	case "DO_NOT_TRUST":
		return false, path + " says DO_NOT_TRUST for it", nil
	}
	return false, path + " has no rule for it", nil
}

// trust is why Gemini CLI will ignore the project's
// .gemini/settings.json (and gemini -p refuse to run there), or "" when
// the project has no aipm entry for it or Gemini CLI trusts it.
func trust(getenv func(string) string, project string) string {
	dirs := clientconfig.ProjectDirs(project)
	data, missing, err := clientconfig.ReadUserFile(filepath.Join(dirs[0], settingsFile))
	if err != nil {
		return fmt.Sprintf("aipm cannot tell whether Gemini CLI uses aipm here: %v: fix it by hand", err)
	}
	var settings struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	if missing || json.Unmarshal(data, &settings) != nil || settings.MCPServers[clientconfig.ServerName] == nil {
		return ""
	}
	path := trustedFoldersPath(getenv)
	dir := clientconfig.Resolved(dirs)
	trusted, why, err := trustedBy(path, dir)
	switch {
	case err != nil:
		return fmt.Sprintf("aipm cannot tell whether Gemini CLI trusts this project: %v: fix it", err)
	case trusted:
		return ""
	}
	return fmt.Sprintf("Gemini CLI reads .gemini/settings.json (aipm's server and hooks) only in a folder it trusts, and gemini -p exits 55 in one it does not (%s): run gemini once in %s and trust the folder, or add %q: \"TRUST_FOLDER\" to %s",
		why, dir, dir, path)
}
