package codex

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"aipm/fsstore"
	"aipm/internal/clientconfig"
	"aipm/internal/lockedfile"

	"github.com/BurntSushi/toml"
)

// Codex reads a project's .codex/ files (config.toml, with aipm's
// [mcp_servers.aipm] entry, and hooks.json) only when the user's Codex
// config ($CODEX_HOME/config.toml, default ~/.codex/config.toml) trusts
// the project: [projects."<dir>"] trust_level = "trusted", looked up for
// the folder itself, then the directory holding its .git, then the main
// checkout's root (no other parent counts; the first entry found decides).
// Elsewhere codex exec runs without aipm's tools and hooks and says
// nothing. It runs a hook only once that hook, too, is trusted (a
// trusted_hash under [hooks.state]), and skips the others silently.

// codexUserConfig is what aipm reads of the user's Codex config.
type codexUserConfig struct {
	Projects map[string]struct {
		TrustLevel string `toml:"trust_level"`
	} `toml:"projects"`
	Hooks struct {
		State map[string]struct {
			TrustedHash string `toml:"trusted_hash"`
		} `toml:"state"`
	} `toml:"hooks"`
}

// trust is why Codex will ignore aipm's server entry or skip
// aipm's hooks in the project, or "" when the project has none or Codex
// trusts them all.
func trust(getenv func(string) string, project string) string {
	dirs := clientconfig.ProjectDirs(project)
	server, err := codexHasServer(dirs[0])
	if err != nil {
		return fmt.Sprintf("aipm cannot tell whether Codex uses aipm here: %v: fix it by hand", err)
	}
	suffixes, err := aipmHooks(filepath.Join(dirs[0], hooksFile))
	if err != nil {
		return fmt.Sprintf("aipm cannot tell whether Codex runs aipm's hooks: %v: fix it by hand", err)
	}
	if !server && len(suffixes) == 0 {
		return ""
	}
	path := codexConfigPath(getenv)
	cfg, missing, err := readCodexConfig(path)
	if err != nil {
		return fmt.Sprintf("aipm cannot tell whether Codex trusts this project: %v: fix it", err)
	}
	if level, key := cfg.trust(dirs); level != "trusted" {
		var ignored []string
		if server {
			ignored = append(ignored, "the aipm server's [mcp_servers.aipm] entry in "+configFile)
		}
		if len(suffixes) > 0 {
			ignored = append(ignored, "aipm's hooks in "+hooksFile)
		}
		saved := trustKey(clientconfig.Resolved(dirs))
		why := fmt.Sprintf("%s has no [projects.%q] trust_level = \"trusted\"", path, saved)
		fix := "run codex once in " + saved + " and trust it"
		switch {
		case missing:
			why = path + " does not exist"
		case level != "":
			why = fmt.Sprintf("%s sets [projects.%q] trust_level = %q", path, key, level)
			fix = "set it to \"trusted\" there"
		}
		if len(suffixes) > 0 {
			fix += ", then trust aipm's hooks with /hooks in codex"
		}
		return fmt.Sprintf("Codex ignores %s, so codex exec runs without them and says nothing: it does not trust this project (%s): %s",
			clientconfig.JoinAnd(ignored), why, fix)
	}
	var untrusted []string
	for _, s := range suffixes {
		if !cfg.trustsHook(dirs, s) {
			untrusted = append(untrusted, strings.TrimPrefix(s, ":"))
		}
	}
	if len(untrusted) == 0 {
		return ""
	}
	return fmt.Sprintf("%d of aipm's %d hooks in %s will be skipped silently: Codex has not trusted them (%s has no [hooks.state] trusted_hash for %s): open codex in the project and trust them with /hooks",
		len(untrusted), len(suffixes), hooksFile, path, strings.Join(untrusted, ", "))
}

// codexHasServer says whether the project's .codex/config.toml holds the
// aipm server's entry.
func codexHasServer(project string) (bool, error) {
	data, exists, err := clientconfig.ReadOptional(filepath.Join(project, configFile))
	if err != nil {
		return false, fmt.Errorf("%s cannot be read (%v)", configFile, clientconfig.PathReason(err))
	}
	if !exists {
		return false, nil
	}
	var doc struct {
		Servers map[string]any `toml:"mcp_servers"`
	}
	if _, err := toml.Decode(string(data), &doc); err != nil {
		return false, fmt.Errorf("%s is not valid TOML (%v)", configFile, err)
	}
	_, ok := doc.Servers[clientconfig.ServerName]
	return ok, nil
}

// codexConfigPath is the user's Codex config: $CODEX_HOME/config.toml,
// else $HOME/.codex/config.toml.
func codexConfigPath(getenv func(string) string) string {
	return filepath.Join(codexHome(getenv), "config.toml")
}

// codexHome is Codex's own folder of the user (its config, login and
// session records): $CODEX_HOME, else $HOME/.codex.
func codexHome(getenv func(string) string) string {
	if home := getenv("CODEX_HOME"); home != "" {
		return home
	}
	return filepath.Join(getenv("HOME"), ".codex")
}

// readCodexConfig reads the user's Codex config; a missing one (missing
// is then true) trusts nothing.
func readCodexConfig(path string) (cfg *codexUserConfig, missing bool, err error) {
	cfg = &codexUserConfig{}
	data, missing, err := clientconfig.ReadUserFile(path)
	if err != nil || missing {
		return cfg, missing, err
	}
	if _, err := toml.Decode(string(data), cfg); err != nil {
		if line, what, ok := fsstore.TOMLSyntax(err); ok {
			return nil, false, fmt.Errorf("%s is not valid TOML at line %d (%s)", path, line, what)
		}
		return nil, false, fmt.Errorf("%s is not what Codex writes: its projects' trust_level and its hooks.state's trusted_hash must be strings", path)
	}
	return cfg, false, nil
}

// trustKey is the directory Codex records its trust for when the
// user trusts a session started in dir: the main git checkout's root,
// else dir.
func trustKey(dir string) string {
	if _, mainRoot := clientconfig.GitRoots(dir); mainRoot != "" {
		return mainRoot
	}
	return dir
}

// trust is the trust_level Codex applies to the project in one of dirs
// and the key it found it under ("" when none): the first of the folder,
// the directory holding its .git and the main checkout's root that has a
// [projects."<key>"] trust_level.
func (c *codexUserConfig) trust(dirs []string) (level, key string) {
	lookups := slices.Clone(dirs)
	slices.Reverse(lookups) // the resolved folder first, as Codex canonicalizes
	nearest, mainRoot := clientconfig.GitRoots(clientconfig.Resolved(dirs))
	for _, k := range append(lookups, nearest, mainRoot) {
		if p, ok := c.Projects[k]; ok && k != "" && p.TrustLevel != "" {
			return p.TrustLevel, k
		}
	}
	return "", ""
}

// trustsHook says whether the config holds a trusted_hash for the hook
// whose key is the path of one of dirs' .codex/hooks.json and suffix.
func (c *codexUserConfig) trustsHook(dirs []string, suffix string) bool {
	for _, d := range dirs {
		key := filepath.Join(d, hooksFile) + suffix
		for k, st := range c.Hooks.State {
			if st.TrustedHash != "" && (k == key || strings.HasPrefix(k, key+":")) {
				return true
			}
		}
	}
	return false
}

// aipmHooks are the key suffixes of aipm's hooks in the hooks file at
// path, ":<event_snake_case>:<group index>:<handler index>", sorted; none
// when the file does not exist.
func aipmHooks(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", hooksFile, err)
	}
	var doc struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s is not a hooks file (line %d: %s)", hooksFile, lockedfile.JSONLine(data, err), lockedfile.JSONWords(data, err))
	}
	var suffixes []string
	for event, groups := range doc.Hooks {
		for g, group := range groups {
			for h, handler := range group.Hooks {
				if clientconfig.IsAipmHook(handler.Command) {
					suffixes = append(suffixes, fmt.Sprintf(":%s:%d:%d", snakeCase(event), g, h))
				}
			}
		}
	}
	slices.Sort(suffixes)
	return suffixes, nil
}

// snakeCase is PreToolUse as pre_tool_use.
func snakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
