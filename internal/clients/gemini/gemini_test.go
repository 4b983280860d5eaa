package gemini

import (
	"encoding/json"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"aipm/internal/clients/clientkit"
)

// TestGeminiLaunch: gemini -p with stream-json, the access level as its
// approval mode (and, under project, a policy of aipm's allowing its
// shell), the workspace trusted, and a home of aipm's in StateDir
// whose settings hold aipm's trusted server (the credential passed by
// name), the hooks, the API key's auth type and no usage statistics.
func TestGeminiLaunch(t *testing.T) {
	c := Client
	state := t.TempDir()
	env := map[string]string{"GEMINI_API_KEY": "k"}
	for access, want := range map[string][]string{
		clientkit.AccessRead:    {"--approval-mode", "default"},
		clientkit.AccessProject: {"--approval-mode", "auto_edit"},
		clientkit.AccessFull:    {"--yolo"},
	} {
		cmd := c.Launch(clientkit.Run{Access: access, Model: "gemini-2.5-pro", Extra: []string{"--debug"}, Exe: "/x/aipm", HookWord: "/x/aipm", Prompt: "go",
			StateDir: state, Getenv: func(k string) string { return env[k] }})
		args := strings.Join(cmd.Args, " ")
		if !strings.HasPrefix(args, "-p go --output-format stream-json "+strings.Join(want, " ")) || !strings.HasSuffix(args, "--model gemini-2.5-pro --debug") {
			t.Errorf("%s: args %q", access, args)
		}
		home := filepath.Join(state, "home")
		if !slices.Contains(cmd.Env, "GEMINI_CLI_HOME="+home) || !slices.Contains(cmd.Env, "GEMINI_CLI_TRUST_WORKSPACE=true") {
			t.Errorf("%s: env %q", access, cmd.Env)
		}
		if len(cmd.Files) != 2 || cmd.Files[0].Path != filepath.Join(home, ".gemini", "settings.json") || cmd.Files[1].Path != filepath.Join(home, ".gemini", "policies", "aipm.toml") {
			t.Fatalf("%s: files %q, %q", access, cmd.Files[0].Path, cmd.Files[1].Path)
		}
		checkPolicy(t, access, cmd)
		var s struct {
			MCPServers map[string]struct {
				Command string
				Args    []string
				Env     map[string]string
				Trust   bool
			} `json:"mcpServers"`
			Hooks    map[string]json.RawMessage
			Security struct{ Auth struct{ SelectedType string } }
			Privacy  struct{ UsageStatisticsEnabled *bool }
		}
		if err := json.Unmarshal(cmd.Files[0].Data, &s); err != nil {
			t.Fatal(err)
		}
		aipm := s.MCPServers["aipm"]
		if aipm.Command != "/x/aipm" || !slices.Equal(aipm.Args, []string{"serve"}) || !aipm.Trust || aipm.Env["AIPM_PASSKEY_FILE"] != "$AIPM_PASSKEY_FILE" ||
			s.Security.Auth.SelectedType != "gemini-api-key" || s.Privacy.UsageStatisticsEnabled == nil || *s.Privacy.UsageStatisticsEnabled ||
			len(s.Hooks) != 5 || !strings.Contains(string(s.Hooks["BeforeTool"]), "/x/aipm hook --client gemini") {
			t.Errorf("%s: settings %s", access, cmd.Files[0].Data)
		}
	}
}

// TestGeminiDialect: Gemini CLI's events are aipm's, mcp_aipm_* its own
// tools, write_file and replace its writers; a denial is {"decision":
// "deny"} (Gemini CLI ignores permissionDecision).
func TestGeminiDialect(t *testing.T) {
	d := Client.Hooks
	for ev, want := range map[string]string{"BeforeTool": clientkit.PreToolUse, "AfterTool": clientkit.PostToolUse, "BeforeAgent": clientkit.UserPromptSubmit, "AfterAgent": clientkit.Stop, "SessionStart": clientkit.SessionStart, "PreToolUse": ""} {
		if got := d.Event(ev); got != want {
			t.Errorf("event %s: %q, want %q", ev, got, want)
		}
	}
	if !d.Own("mcp_aipm_help") || d.Own("mcp__aipm__help") || d.Own("write_file") {
		t.Error("own tools are not mcp_aipm_*")
	}
	if got := d.WritingTools["write_file"](json.RawMessage(`{"file_path":"a.go","content":"x"}`)); !slices.Equal(got, []string{"a.go"}) {
		t.Errorf("write_file writes %q", got)
	}
	if d.WritingTools["replace"] == nil {
		t.Error("replace is not a writing tool")
	}
	var deny map[string]any
	if err := json.Unmarshal(d.Deny("stop").Stdout, &deny); err != nil || deny["decision"] != "deny" || deny["reason"] != "stop" || len(deny) != 2 {
		t.Errorf("deny: %s", d.Deny("stop").Stdout)
	}
	if ctx := string(d.Context(clientkit.PostToolUse, "news").Stdout); !strings.Contains(ctx, `"hookEventName":"AfterTool"`) || !strings.Contains(ctx, `"additionalContext":"news"`) {
		t.Errorf("context: %s", ctx)
	}
}

// TestGeminiOutput: stream-json's refused calls (as measured with Gemini
// CLI 0.61.0: a hook's or its policy's policy_violation, a tool its
// approval mode left out) are the refusals, by tool_id and name; a call
// that ran, or failed in running, is not; the assistant's text is logged.
func TestGeminiOutput(t *testing.T) {
	var log strings.Builder
	o := newGeminiOutput(clientkit.Run{}, &log)
	stream := `{"type":"init","session_id":"s","model":"gemini-2.5-pro"}
{"type":"tool_use","tool_name":"write_file","tool_id":"write_file__call_1","parameters":{"file_path":"x"}}
{"type":"tool_result","tool_id":"write_file__call_1","status":"error","output":"Tool execution blocked: aipm interrupt","error":{"type":"policy_violation","message":"Tool execution blocked: aipm interrupt"}}
{"type":"tool_use","tool_name":"run_shell_command","tool_id":"run_shell_command__call_2","parameters":{"command":"ls"}}
{"type":"tool_result","tool_id":"run_shell_command__call_2","status":"error","error":{"type":"tool_not_registered","message":"Tool \"run_shell_command\" not found."}}
{"type":"tool_use","tool_name":"mcp_aipm_help","tool_id":"mcp_aipm_help__call_3","parameters":{}}
{"type":"tool_result","tool_id":"mcp_aipm_help__call_3","status":"error","error":{"type":"mcp_tool_error","message":"x"}}
{"type":"message","role":"assistant","content":"DONE","delta":true}
not an event
{"type":"result","status":"success"}`
	io.WriteString(o, stream[:100])
	io.WriteString(o, stream[100:])
	got := o.Refusals()
	want := []clientkit.Refusal{{ID: "write_file__call_1", Tool: "write_file", Said: "Tool execution blocked: aipm interrupt"},
		{ID: "run_shell_command__call_2", Tool: "run_shell_command", Said: `Tool "run_shell_command" not found.`}}
	if !slices.Equal(got, want) {
		t.Errorf("refusals %+v\nwant %+v", got, want)
	}
	if !strings.Contains(log.String(), "DONE") || !strings.Contains(log.String(), "not an event") {
		t.Errorf("log %q", log.String())
	}
}

// checkPolicy: the policy of aipm's Gemini CLI home allows the shell under
// project alone, is written at every run (so that a narrower access
// replaces it) and is the only file of its folder.
func checkPolicy(t *testing.T, access string, cmd clientkit.Command) {
	t.Helper()
	if allows := strings.Contains(string(cmd.Files[1].Data), `toolName = "run_shell_command"`); allows != (access == clientkit.AccessProject) {
		t.Errorf("%s: policy %q", access, cmd.Files[1].Data)
	}
	if !slices.Equal(cmd.Owned, []string{filepath.Dir(cmd.Files[1].Path)}) {
		t.Errorf("%s: owned %q: want the policies' folder, aipm's policy its only file", access, cmd.Owned)
	}
}
