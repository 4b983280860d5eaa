package clientconfig

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// TestMCPConfigRoundTrip: each client's config decodes back to the same
// command, args and credential environment, even for paths that need
// quoting; each is one document.
func TestMCPConfigRoundTrip(t *testing.T) {
	base := Server{Command: `/opt/a "b"\c/aipm`, Args: []string{"--dir", "/home/x/プロジェクト \\ 'q'\n", "serve"}, ToolTimeoutSec: 60, ApprovalMode: "approve"}
	pinned := base
	pinned.Env = map[string]string{"AIPM_AGENT_ID": "coder", "AIPM_PASSKEY_FILE": `/home/x/"k".key`}
	for name, tc := range map[string]struct {
		in        Server
		claudeEnv map[string]string
		codex     Server
	}{
		"from the client's environment": {base, map[string]string{"AIPM_AGENT_ID": "${AIPM_AGENT_ID:-}", "AIPM_PASSKEY_FILE": "${AIPM_PASSKEY_FILE:-}", "AIPM_PASSKEY": "${AIPM_PASSKEY:-}"}, withEnvVars(base)},
		"pinned to one agent":           {pinned, pinned.Env, pinned},
	} {
		t.Run(name, func(t *testing.T) {
			claude, err := ClaudeConfig(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(bytes.NewReader(claude))
			var doc struct {
				MCPServers map[string]Server `json:"mcpServers"`
			}
			if err := dec.Decode(&doc); err != nil {
				t.Fatalf("claude's .mcp.json is not JSON: %v\n%s", err, claude)
			}
			if dec.More() {
				t.Fatalf("claude's output holds more than one JSON document:\n%s", claude)
			}
			got := doc.MCPServers["aipm"]
			if got.Command != tc.in.Command || !reflect.DeepEqual(got.Args, tc.in.Args) || !reflect.DeepEqual(got.Env, tc.claudeEnv) {
				t.Errorf("claude config decodes to %+v, want %+v with env %v", got, tc.in, tc.claudeEnv)
			}

			codex, err := CodexConfig(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			var cfg struct {
				MCPServers map[string]Server `toml:"mcp_servers"`
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

func withEnvVars(s Server) Server {
	s.EnvVars = CredentialVars
	return s
}

// TestClaudeSettingsMerge: the settings keys are added once, to what the
// file holds, in its order.
func TestClaudeSettingsMerge(t *testing.T) {
	root, err := parseObject([]byte(`{"b": 1, "permissions": {"deny": ["Bash"]}, "a": [2]}`))
	if err != nil {
		t.Fatal(err)
	}
	if what, err := mergeClaudeSettings(&root, "aipm"); err != nil || what == "" {
		t.Fatalf("first merge: %q, %v", what, err)
	}
	out, err := json.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	hooks, err := HooksDocument(ClaudeHookEvents("aipm"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"b":1,"permissions":{"deny":["Bash"],"allow":["mcp__aipm"]},"a":[2],"enabledMcpjsonServers":["aipm"],` + string(hooks[1:])
	if string(out) != want {
		t.Errorf("merged settings = %s, want %s", out, want)
	}
	if what, err := mergeClaudeSettings(&root, "aipm"); err != nil || what != "" {
		t.Errorf("second merge: %q, %v; want no change", what, err)
	}
	for _, bad := range []string{`[1]`, `{"permissions": []}`, `{"enabledMcpjsonServers": "aipm"}`, `{} {}`, `{"hooks": []}`, `{"hooks": {"Stop": {}}}`} {
		root, err := parseObject([]byte(bad))
		if err == nil {
			_, err = mergeClaudeSettings(&root, "aipm")
		}
		if err == nil {
			t.Errorf("settings %s merged without an error", bad)
		}
	}
}

// TestAipmCommand: "aipm" when an aipm is on PATH, whichever it is;
// else this binary's absolute path, with a warning.
func TestAipmCommand(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "aipm"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if got := AipmCommand(dir, &stderr); got != "aipm" {
		t.Errorf("with an aipm on PATH: command %q, want aipm", got)
	}
	if !strings.Contains(stderr.String(), "is not this binary") {
		t.Errorf("another aipm on PATH: no warning in %q", stderr.String())
	}
	stderr.Reset()
	if got := AipmCommand("", &stderr); !filepath.IsAbs(got) {
		t.Errorf("with no aipm on PATH: command %q, want this binary's absolute path", got)
	}
	if !strings.Contains(stderr.String(), "aipm: warning: ") {
		t.Errorf("no aipm on PATH: no warning in %q", stderr.String())
	}
}
