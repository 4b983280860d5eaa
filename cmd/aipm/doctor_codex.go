package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/BurntSushi/toml"

	"aipm/fsstore"
)

// Codex runs a project's .codex/hooks.json only when the user's Codex
// config ($CODEX_HOME/config.toml, default ~/.codex/config.toml) trusts
// the project and holds a trusted_hash for each hook; it skips the others
// without a word. This file tells the user, from aipm doctor and after
// aipm mcp-config codex --write.

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

// warnCodexHooks prints, on stderr, why Codex will not run aipm's hooks
// of the project, if it will not.
func warnCodexHooks(e *env, project string) {
	if msg := codexHooksWarning(e, project); msg != "" {
		fmt.Fprintf(e.stderr, "aipm: warning: %s\n", msg)
	}
}

// codexHooksWarning is why Codex will skip aipm's hooks in the project's
// .codex/hooks.json, or "" when there are none or Codex trusts them all.
func codexHooksWarning(e *env, project string) string {
	dirs := projectDirs(project)
	suffixes, err := aipmCodexHooks(filepath.Join(dirs[0], codexHooksFile))
	if err != nil {
		return fmt.Sprintf("aipm cannot tell whether Codex runs aipm's hooks: %v: fix it by hand", err)
	}
	if len(suffixes) == 0 {
		return ""
	}
	path := codexConfigPath(e)
	cfg, err := readCodexConfig(path)
	if err != nil {
		return fmt.Sprintf("aipm cannot tell whether Codex runs aipm's hooks in %s: %v: fix it", codexHooksFile, err)
	}
	if !cfg.trusts(dirs) {
		return fmt.Sprintf("aipm's hooks in %s will be skipped silently: Codex does not trust this project (%s has no [projects.%q] trust_level = \"trusted\"): open codex in the project, trust it, then trust the hooks with /hooks",
			codexHooksFile, path, dirs[0])
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
		len(untrusted), len(suffixes), codexHooksFile, path, strings.Join(untrusted, ", "))
}

// projectDirs are the project's absolute directory and, when it differs,
// the same with symbolic links resolved (the one Codex may have recorded).
func projectDirs(project string) []string {
	abs, err := filepath.Abs(project)
	if err != nil {
		abs = project
	}
	dirs := []string{abs}
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		dirs = append(dirs, real)
	}
	return dirs
}

// codexConfigPath is the user's Codex config: $CODEX_HOME/config.toml,
// else $HOME/.codex/config.toml.
func codexConfigPath(e *env) string {
	if home := e.getenv("CODEX_HOME"); home != "" {
		return filepath.Join(home, "config.toml")
	}
	return filepath.Join(e.getenv("HOME"), ".codex", "config.toml")
}

// readCodexConfig reads the user's Codex config; a missing one trusts
// nothing.
func readCodexConfig(path string) (*codexUserConfig, error) {
	cfg := &codexUserConfig{}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read Codex's config: %w", err)
	}
	if _, err := toml.Decode(string(data), cfg); err != nil {
		if line, what, ok := fsstore.TOMLSyntax(err); ok {
			return nil, fmt.Errorf("%s is not valid TOML at line %d (%s)", path, line, what)
		}
		return nil, fmt.Errorf("%s is not what Codex writes: its projects' trust_level and its hooks.state's trusted_hash must be strings", path)
	}
	return cfg, nil
}

// trusts says whether the config trusts one of dirs, or a parent of one.
func (c *codexUserConfig) trusts(dirs []string) bool {
	for key, p := range c.Projects {
		if p.TrustLevel != "trusted" || !filepath.IsAbs(key) {
			continue
		}
		key = filepath.Clean(key)
		for _, d := range dirs {
			if d == key || strings.HasPrefix(d, strings.TrimSuffix(key, string(filepath.Separator))+string(filepath.Separator)) {
				return true
			}
		}
	}
	return false
}

// trustsHook says whether the config holds a trusted_hash for the hook
// whose key is the path of one of dirs' .codex/hooks.json and suffix.
func (c *codexUserConfig) trustsHook(dirs []string, suffix string) bool {
	for _, d := range dirs {
		key := filepath.Join(d, codexHooksFile) + suffix
		for k, st := range c.Hooks.State {
			if st.TrustedHash != "" && (k == key || strings.HasPrefix(k, key+":")) {
				return true
			}
		}
	}
	return false
}

// aipmCodexHooks are the key suffixes of aipm's hooks in the hooks file at
// path, ":<event_snake_case>:<group index>:<handler index>", sorted; none
// when the file does not exist.
func aipmCodexHooks(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", codexHooksFile, err)
	}
	var doc struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s is not a hooks file (line %d: %s)", codexHooksFile, fsstore.JSONLine(data, err), fsstore.JSONWords(data, err))
	}
	var suffixes []string
	for event, groups := range doc.Hooks {
		for g, group := range groups {
			for h, handler := range group.Hooks {
				if isAipmHook(handler.Command) {
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
