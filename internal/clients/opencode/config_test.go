package opencode

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

// TestWriteFiles: mcp-config opencode --write merges aipm's server into
// the project's opencode.json and names aipm's plugin in its "plugin"
// list, keeping every other key, server and plugin (a [spec, options]
// pair included), and writes the plugin beside it; a second write changes
// nothing; a file that is not a JSON object is refused, and nothing is
// written.
func TestWriteFiles(t *testing.T) {
	s := clientconfig.Server{Command: "aipm", Args: clientconfig.ServeArgs, HookCommand: "aipm"}
	tests := []struct {
		name, config string
		wantPlugins  int    // entries of "plugin" after the write
		wantErr      string // in the error, "" for none
	}{
		{name: "none", config: "", wantPlugins: 1},
		{name: "the user's", config: `{"theme": "tokyonight", "mcp": {"other": {"type": "remote", "url": "https://example.com"}},
			"plugin": ["opencode-wakatime", ["./mine.js", {"x": 1}]]}`, wantPlugins: 3},
		{name: "aipm's already", config: `{"plugin": [["./opencode-aipm-hooks.js", {}]]}`, wantPlugins: 1},
		{name: "comments", config: "// mine\n{}", wantErr: "opencode.json cannot be merged into"},
		{name: "plugin not a list", config: `{"plugin": "x"}`, wantErr: `its "plugin" is not a list`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.config != "" {
				writeFile(t, filepath.Join(dir, configFile), tt.config)
			}
			err := clientconfig.Write(io.Discard, "opencode", dir, s, writeFiles)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("--write: want an error with %q, got %v", tt.wantErr, err)
				}
				if _, err := os.Stat(filepath.Join(dir, pluginFile)); !os.IsNotExist(err) {
					t.Errorf("a refused --write wrote the plugin (%v)", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(filepath.Join(dir, configFile))
			var got struct {
				Theme  string
				MCP    map[string]map[string]any `json:"mcp"`
				Plugin []json.RawMessage
			}
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatal(err)
			}
			aipm := got.MCP["aipm"]
			if aipm["type"] != "local" || len(got.Plugin) != tt.wantPlugins || !bytes.Contains(data, []byte(`"./opencode-aipm-hooks.js"`)) {
				t.Errorf("opencode.json after --write:\n%s", data)
			}
			if strings.Contains(tt.config, "tokyonight") && (got.Theme != "tokyonight" || got.MCP["other"] == nil) {
				t.Errorf("the user's keys were not kept:\n%s", data)
			}
			js, err := os.ReadFile(filepath.Join(dir, pluginFile))
			if err != nil || !bytes.Contains(js, []byte(`const command = "aipm hook --client opencode"`)) {
				t.Errorf("the plugin after --write (%v):\n%s", err, js)
			}
			if err := clientconfig.Write(io.Discard, "opencode", dir, s, writeFiles); err != nil {
				t.Fatal(err)
			}
			if again, _ := os.ReadFile(filepath.Join(dir, configFile)); !bytes.Equal(again, data) {
				t.Errorf("a second write changed opencode.json:\n%s", again)
			}
		})
	}
}

// TestPluginCommand: the plugin runs the hook command as a JSON string,
// however the command word is spelt (a path with a space, a quote).
func TestPluginCommand(t *testing.T) {
	for _, word := range []string{"aipm", "aipm-hook", "/opt/my tools/aipm", `/x/it's/aipm`} {
		js := string(plugin(word))
		line := js[strings.Index(js, "const command = "):]
		line = strings.TrimPrefix(line[:strings.IndexByte(line, '\n')], "const command = ")
		var command string
		if err := json.Unmarshal([]byte(line), &command); err != nil || command != clientconfig.HookCommand(word, "opencode") {
			t.Errorf("plugin(%q): command %s (%v), want %q", word, line, err, clientconfig.HookCommand(word, "opencode"))
		}
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
