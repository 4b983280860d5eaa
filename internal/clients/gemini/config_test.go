package gemini

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"aipm/internal/clientconfig"
)

// TestGeminiWrite: mcp-config gemini --write merges aipm's server (trusted,
// the credential passed as "$VAR": Gemini CLI drops AIPM_PASSKEY_FILE from
// a server's environment) and aipm's hooks in Gemini CLI's event names
// into .gemini/settings.json, keeping every other key, server and hook; a
// second write changes nothing.
func TestGeminiWrite(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, ".gemini"), 0o755)
	writeFile(t, filepath.Join(dir, settingsFile), `{"theme":"Dracula","mcpServers":{"other":{"command":"x"}},
		"hooks":{"BeforeTool":[{"matcher":"write_file","hooks":[{"type":"command","command":"lint"}]}]}}`, 0o644)
	s := clientconfig.Server{Command: "aipm", Args: clientconfig.ServeArgs, HookCommand: "aipm"}
	write := func() {
		t.Helper()
		if err := clientconfig.Write(io.Discard, "gemini", dir, s, writeFiles); err != nil {
			t.Fatal(err)
		}
	}
	write()
	data, _ := os.ReadFile(filepath.Join(dir, settingsFile))
	var got struct {
		Theme      string
		MCPServers map[string]map[string]any           `json:"mcpServers"`
		Hooks      map[string][]clientconfig.HookGroup `json:"hooks"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	aipm := got.MCPServers["aipm"]
	env, _ := aipm["env"].(map[string]any)
	if got.Theme != "Dracula" || got.MCPServers["other"] == nil || aipm["trust"] != true || env["AIPM_PASSKEY_FILE"] != "$AIPM_PASSKEY_FILE" || aipm["command"] != "aipm" {
		t.Errorf("settings after --write:\n%s", data)
	}
	for _, ev := range []string{"SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent"} {
		groups := got.Hooks[ev]
		if len(groups) == 0 || groups[len(groups)-1].Hooks[0].Command != "aipm hook --client gemini" {
			t.Errorf("hooks.%s: %+v", ev, groups)
		}
	}
	if len(got.Hooks["BeforeTool"]) != 2 || got.Hooks["BeforeTool"][0].Hooks[0].Command != "lint" {
		t.Errorf("the user's BeforeTool hook was not kept: %+v", got.Hooks["BeforeTool"])
	}
	write()
	if again, _ := os.ReadFile(filepath.Join(dir, settingsFile)); !bytes.Equal(again, data) {
		t.Errorf("a second write changed the file:\n%s", again)
	}
}

// TestGeminiTrust: with aipm's entry in .gemini/settings.json, doctor warns
// until trustedFolders.json trusts the project (the folder, or its parent
// by TRUST_PARENT), and after a DO_NOT_TRUST that is the longest rule.
func TestGeminiTrust(t *testing.T) {
	home := t.TempDir()
	project, _ := filepath.EvalSymlinks(t.TempDir())
	getenv := func(k string) string { return map[string]string{"HOME": home}[k] }
	if w := trust(getenv, project); w != "" {
		t.Errorf("no aipm entry, yet: %s", w)
	}
	os.MkdirAll(filepath.Join(project, ".gemini"), 0o755)
	os.MkdirAll(filepath.Join(home, ".gemini"), 0o755)
	writeFile(t, filepath.Join(project, settingsFile), `{"mcpServers":{"aipm":{"command":"aipm"}}}`, 0o644)
	rules := filepath.Join(home, ".gemini", "trustedFolders.json")
	for _, tc := range []struct {
		file string // "" for none
		warn string // in the warning; "" for none
	}{
		{"", "does not exist"},
		{`{"/elsewhere":"TRUST_FOLDER"}`, "has no rule for it"},
		{`{"` + project + `":"TRUST_FOLDER"}`, ""},
		{`{"` + filepath.Join(project, "child") + `":"TRUST_PARENT"}`, ""},
		{`{"` + filepath.Dir(project) + `":"TRUST_FOLDER","` + project + `":"DO_NOT_TRUST"}`, "DO_NOT_TRUST"},
		{`not json`, "not valid JSON"},
	} {
		os.Remove(rules)
		if tc.file != "" {
			writeFile(t, rules, tc.file, 0o600)
		}
		w := trust(getenv, project)
		if tc.warn == "" && w != "" || tc.warn != "" && !strings.Contains(w, tc.warn) {
			t.Errorf("trustedFolders %s: warning %q, want %q", tc.file, w, tc.warn)
		}
	}
}

func writeFile(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}
