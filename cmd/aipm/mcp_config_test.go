package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// TestMCPConfigRoundTrip: each client's config decodes back to the same
// command, args and credential environment, even for paths that need
// quoting; Claude's output is its .mcp.json document, then its settings.
func TestMCPConfigRoundTrip(t *testing.T) {
	base := mcpServer{Command: `/opt/a "b"\c/aipm`, Args: []string{"--dir", "/home/x/プロジェクト \\ 'q'\n", "serve"}, ToolTimeoutSec: 60, ApprovalMode: "approve"}
	pinned := base
	pinned.Env = map[string]string{"AIPM_AGENT_ID": "coder", "AIPM_PASSKEY_FILE": `/home/x/"k".key`}
	for name, tc := range map[string]struct {
		in        mcpServer
		claudeEnv map[string]string
		codex     mcpServer
	}{
		"from the client's environment": {base, map[string]string{"AIPM_AGENT_ID": "${AIPM_AGENT_ID:-}", "AIPM_PASSKEY_FILE": "${AIPM_PASSKEY_FILE:-}", "AIPM_PASSKEY": "${AIPM_PASSKEY:-}"}, withEnvVars(base)},
		"pinned to one agent":           {pinned, pinned.Env, pinned},
	} {
		t.Run(name, func(t *testing.T) {
			claude, err := claudeConfig(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(strings.NewReader(uncomment(claude)))
			var doc struct {
				MCPServers map[string]mcpServer `json:"mcpServers"`
			}
			var settings struct {
				Enabled     []string            `json:"enabledMcpjsonServers"`
				Permissions map[string][]string `json:"permissions"`
			}
			if err := dec.Decode(&doc); err != nil {
				t.Fatalf("claude's .mcp.json is not JSON: %v\n%s", err, claude)
			}
			if err := dec.Decode(&settings); err != nil {
				t.Fatalf("claude's settings are not JSON: %v\n%s", err, claude)
			}
			got := doc.MCPServers["aipm"]
			if got.Command != tc.in.Command || !reflect.DeepEqual(got.Args, tc.in.Args) || !reflect.DeepEqual(got.Env, tc.claudeEnv) {
				t.Errorf("claude config decodes to %+v, want %+v with env %v", got, tc.in, tc.claudeEnv)
			}
			if !reflect.DeepEqual(settings.Enabled, []string{"aipm"}) || !reflect.DeepEqual(settings.Permissions["allow"], []string{"mcp__aipm"}) {
				t.Errorf("claude settings = %+v", settings)
			}

			codex, err := codexConfig(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			var cfg struct {
				MCPServers map[string]mcpServer `toml:"mcp_servers"`
			}
			if _, err := toml.Decode(string(codex), &cfg); err != nil {
				t.Fatalf("codex config is not TOML: %v\n%s", err, codex)
			}
			if got := cfg.MCPServers["aipm"]; !reflect.DeepEqual(got, tc.codex) {
				t.Errorf("codex config decodes to %+v, want %+v", got, tc.codex)
			}
		})
	}
}

func withEnvVars(s mcpServer) mcpServer {
	s.EnvVars = credentialVars
	return s
}

// uncomment drops the # lines between the documents of Claude's output.
func uncomment(b []byte) string {
	var out strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if !strings.HasPrefix(sc.Text(), "#") {
			out.WriteString(sc.Text() + "\n")
		}
	}
	return out.String()
}
