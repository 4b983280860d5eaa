package main

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/BurntSushi/toml"
)

// TestMCPConfigRoundTrip: each client's config decodes back to the same
// command and args, even for paths that need quoting.
func TestMCPConfigRoundTrip(t *testing.T) {
	want := mcpServer{Command: `/opt/a "b"\c/aipm`, Args: []string{"--dir", "/home/x/プロジェクト \\ 'q'\n", "serve"}, ToolTimeoutSec: 60}
	claude, err := claudeConfig(want)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		MCPServers map[string]mcpServer `json:"mcpServers"`
	}
	if err := json.Unmarshal(claude, &doc); err != nil {
		t.Fatalf("claude config is not JSON: %v\n%s", err, claude)
	}
	got := doc.MCPServers["aipm"]
	if got.Command != want.Command || !reflect.DeepEqual(got.Args, want.Args) {
		t.Errorf("claude config decodes to %+v, want %+v", got, want)
	}

	codex, err := codexConfig(want)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		MCPServers map[string]mcpServer `toml:"mcp_servers"`
	}
	if _, err := toml.Decode(string(codex), &cfg); err != nil {
		t.Fatalf("codex config is not TOML: %v\n%s", err, codex)
	}
	if got := cfg.MCPServers["aipm"]; !reflect.DeepEqual(got, want) {
		t.Errorf("codex config decodes to %+v, want %+v", got, want)
	}
}
