package claude

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"aipm/internal/clientconfig"
	"aipm/internal/clients/clientkit"
)

// TestClaudeOutput: claude -p's JSON result gives the log its text and
// the refusals its permission_denials; anything else is passed on.
func TestClaudeOutput(t *testing.T) {
	var log strings.Builder
	out := newClaudeOutput(clientkit.Run{}, &log)
	out.Write([]byte(`{"type":"result","subtype":"success","result":"done it","permission_denials":[{"tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{"command":"make"}},{"tool_name":"Write","tool_use_id":"toolu_2","tool_input":{}}]}` + "\n"))
	got := out.Refusals()
	if want := []clientkit.Refusal{{ID: "toolu_1", Tool: "Bash"}, {ID: "toolu_2", Tool: "Write"}}; !reflect.DeepEqual(got, want) || log.String() != "done it\n" {
		t.Errorf("refusals %+v, log %q", got, log.String())
	}
	log.Reset()
	out = newClaudeOutput(clientkit.Run{}, &log)
	out.Write([]byte("Error: Invalid API key\n"))
	if got := out.Refusals(); got != nil || log.String() != "Error: Invalid API key\n" {
		t.Errorf("refusals %+v, log %q", got, log.String())
	}
}

// TestMCPConfigRoundTrip: Claude Code's .mcp.json decodes back to the
// same command, args and credential environment, even for paths that need
// quoting; it is one document.
func TestMCPConfigRoundTrip(t *testing.T) {
	base := clientconfig.Server{Command: `/opt/a "b"\c/aipm`, Args: []string{"--dir", "/home/x/プロジェクト \\ 'q'\n", "serve"}, ToolTimeoutSec: 60, ApprovalMode: "approve"}
	pinned := base
	pinned.Env = map[string]string{"AIPM_AGENT_ID": "coder", "AIPM_PASSKEY_FILE": `/home/x/"k".key`}
	for name, tc := range map[string]struct {
		in        clientconfig.Server
		claudeEnv map[string]string
	}{
		"from the client's environment": {base, map[string]string{"AIPM_AGENT_ID": "${AIPM_AGENT_ID:-}", "AIPM_PASSKEY_FILE": "${AIPM_PASSKEY_FILE:-}", "AIPM_PASSKEY": "${AIPM_PASSKEY:-}"}},
		"pinned to one agent":           {pinned, pinned.Env},
	} {
		t.Run(name, func(t *testing.T) {
			claude, err := configDoc(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(bytes.NewReader(claude))
			var doc struct {
				MCPServers map[string]clientconfig.Server `json:"mcpServers"`
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
		})
	}
}

// TestClaudeSettingsMerge: the settings keys are added once, to what the
// file holds, in its order.
func TestClaudeSettingsMerge(t *testing.T) {
	root, err := clientconfig.ParseObject([]byte(`{"b": 1, "permissions": {"deny": ["Bash"]}, "a": [2]}`))
	if err != nil {
		t.Fatal(err)
	}
	if what, err := mergeSettings(&root, "aipm"); err != nil || what == "" {
		t.Fatalf("first merge: %q, %v", what, err)
	}
	out, err := json.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	hooks, err := clientconfig.HooksDocument(hookEvents("aipm"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"b":1,"permissions":{"deny":["Bash"],"allow":["mcp__aipm"]},"a":[2],"enabledMcpjsonServers":["aipm"],` + string(hooks[1:])
	if string(out) != want {
		t.Errorf("merged settings = %s, want %s", out, want)
	}
	if what, err := mergeSettings(&root, "aipm"); err != nil || what != "" {
		t.Errorf("second merge: %q, %v; want no change", what, err)
	}
	for _, bad := range []string{`[1]`, `{"permissions": []}`, `{"enabledMcpjsonServers": "aipm"}`, `{} {}`, `{"hooks": []}`, `{"hooks": {"Stop": {}}}`} {
		root, err := clientconfig.ParseObject([]byte(bad))
		if err == nil {
			_, err = mergeSettings(&root, "aipm")
		}
		if err == nil {
			t.Errorf("settings %s merged without an error", bad)
		}
	}
}

// TestClaudeTrustKey: Claude Code saves the trust dialog's answer for a
// folder below a repository's root under that root.
func TestClaudeTrustKey(t *testing.T) {
	repo := t.TempDir()
	sub := filepath.Join(repo, "src", "app")
	for _, d := range []string{filepath.Join(repo, ".git"), sub} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got := trustKey(sub); got != repo {
		t.Errorf("Claude Code saves trust for %s under %q, want the repository's root %q", sub, got, repo)
	}
}
