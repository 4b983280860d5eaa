package launch

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"aipm"
	"aipm/internal/clientconfig"
	"aipm/internal/clients"
)

func TestLaunchSpecOf(t *testing.T) {
	for _, tc := range []struct {
		command []string
		ok      bool
		want    Spec
		err     string
	}{
		{[]string{"aipm", "sim"}, false, Spec{}, ""},
		{[]string{"claude", "-p", "x"}, false, Spec{}, ""},
		{[]string{"aipm", "launch", "claude"}, true, Spec{Client: "claude", Access: AccessProject, Extra: []string{}}, ""},
		{[]string{"/usr/local/bin/aipm", "launch", "codex", "--model", "m", "--access", "read", "--", "--x", "y"}, true,
			Spec{Client: "codex", Model: "m", Access: AccessRead, Extra: []string{"--x", "y"}}, ""},
		{[]string{"aipm", "launch"}, true, Spec{}, "exactly one client"},
		{[]string{"aipm", "launch", "nosuch"}, true, Spec{}, `client "nosuch" is unknown`},
		{[]string{"aipm", "launch", "gemini", "--access", "full"}, true, Spec{Client: "gemini", Access: AccessFull}, ""},
		{[]string{"aipm", "launch", "claude", "--access", "root"}, true, Spec{}, `--access "root" is unknown`},
		{[]string{"aipm", "launch", "claude", "--colour"}, true, Spec{}, "unknown flag"},
	} {
		spec, ok, err := SpecOf(tc.command)
		if ok != tc.ok {
			t.Errorf("%q: ok = %v, want %v", tc.command, ok, tc.ok)
			continue
		}
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err = %v, want one saying %q", tc.command, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.command, err)
			continue
		}
		if ok && (spec.Client != tc.want.Client || spec.Model != tc.want.Model || spec.Access != tc.want.Access || !slices.Equal(spec.Extra, tc.want.Extra)) {
			t.Errorf("%q: spec %+v, want %+v", tc.command, spec, tc.want)
		}
		// The command agent add writes reads back as the same spec.
		if ok {
			back, _, err := SpecOf(spec.Command())
			if err != nil || back.Client != spec.Client || back.Model != spec.Model || back.Access != spec.Access || !slices.Equal(back.Extra, spec.Extra) {
				t.Errorf("%q: command() %q reads back as %+v, %v", tc.command, spec.Command(), back, err)
			}
		}
	}
}

// TestLaunchArgs: each client gets aipm's server (this aipm, serve), the
// hooks mcp-config writes, aipm's tools allowed, the access level as its
// permissions, and nothing secret: the prompt names no passkey.
func TestLaunchArgs(t *testing.T) {
	const exe, word, prompt = "/opt/aipm", "aipm-hook", "PROMPT"
	t.Run("claude", func(t *testing.T) { checkClaudeLaunchArgs(t, exe, word, prompt) })
	t.Run("codex", func(t *testing.T) { checkCodexLaunchArgs(t, exe, word, prompt) })
}

// checkClaudeLaunchArgs: claude's --settings carry mcp-config's hooks and
// the sandbox, its --mcp-config this aipm's server, its tools aipm's, and
// each access level its permission mode.
func checkClaudeLaunchArgs(t *testing.T, exe, word, prompt string) {
	claude := launchArgs(Spec{Client: "claude", Access: AccessProject}, exe, word, prompt)
	var settings struct {
		Hooks   json.RawMessage `json:"hooks"`
		Sandbox map[string]bool `json:"sandbox"`
	}
	if err := json.Unmarshal([]byte(flagValue(t, claude, "--settings")), &settings); err != nil {
		t.Fatal(err)
	}
	c, _ := clients.Get("claude")
	want, _ := clientconfig.HooksDocument(c.Hooks.Entries(word))
	var wantDoc struct {
		Hooks json.RawMessage `json:"hooks"`
	}
	json.Unmarshal(want, &wantDoc)
	if !sameJSON(settings.Hooks, wantDoc.Hooks) {
		t.Errorf("claude's --settings hooks are\n%s\nwant\n%s", settings.Hooks, wantDoc.Hooks)
	}
	if !settings.Sandbox["enabled"] || flagValue(t, claude, "--permission-mode") != "acceptEdits" || flagValue(t, claude, "--allowedTools") != "mcp__aipm" {
		t.Errorf("claude with access project: %q", claude)
	}
	// alwaysLoad: connected before the first turn, its tools not deferred.
	if got := flagValue(t, claude, "--mcp-config"); got != `{"mcpServers":{"aipm":{"alwaysLoad":true,"args":["serve"],"command":"/opt/aipm"}}}` {
		t.Errorf("claude's --mcp-config is %s", got)
	}
	for access, mode := range map[string]string{AccessRead: "default", AccessFull: "bypassPermissions"} {
		if got := flagValue(t, launchArgs(Spec{Client: "claude", Access: access}, exe, word, prompt), "--permission-mode"); got != mode {
			t.Errorf("claude with access %s: permission mode %s, want %s", access, got, mode)
		}
	}
}

// checkCodexLaunchArgs: codex runs exec in the workspace sandbox with the
// extra arguments and the prompt last, and its -c values, TOML as codex
// parses them, give this aipm's server, required and approved, and
// mcp-config's hooks.
func checkCodexLaunchArgs(t *testing.T, exe, word, prompt string) {
	codex := launchArgs(Spec{Client: "codex", Access: AccessProject, Model: "m", Extra: []string{"--x"}}, exe, word, prompt)
	if codex[0] != "exec" || flagValue(t, codex, "--sandbox") != "workspace-write" || codex[len(codex)-1] != prompt || codex[len(codex)-2] != "--x" {
		t.Errorf("codex: %q", codex)
	}
	// Every -c value is TOML, as codex parses it; the hooks are mcp-config's.
	got := codexConfigValues(t, codex)
	if got["mcp_servers.aipm.command"] != exe || got["mcp_servers.aipm.default_tools_approval_mode"] != "approve" || got["mcp_servers.aipm.required"] != true {
		t.Errorf("codex's server: %v", got)
	}
	c, _ := clients.Get("codex")
	for _, ev := range c.Hooks.Entries(word) {
		raw, _ := json.Marshal(got["hooks."+ev.Name])
		want, _ := json.Marshal([]clientconfig.HookGroup{ev.Group})
		if !sameJSON(raw, want) {
			t.Errorf("codex's hooks.%s is %s, want %s", ev.Name, raw, want)
		}
	}
}

// flagValue is the argument after flag in args; the test fails when there
// is none.
func flagValue(t *testing.T, args []string, flag string) string {
	t.Helper()
	i := slices.Index(args, flag)
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("%s missing in %q", flag, args)
	}
	return args[i+1]
}

// codexConfigValues decodes codex's -c key=value arguments, each value as
// TOML; the test fails on one that is not.
func codexConfigValues(t *testing.T, codex []string) map[string]any {
	t.Helper()
	got := map[string]any{}
	for i, a := range codex {
		if a != "-c" {
			continue
		}
		key, v, _ := strings.Cut(codex[i+1], "=")
		var doc map[string]any
		if _, err := toml.Decode("v = "+v, &doc); err != nil {
			t.Fatalf("-c %s: not TOML: %v", codex[i+1], err)
		}
		got[key] = doc["v"]
	}
	return got
}

// TestExampleLaunchCommands: config.example.toml's client commands are
// aipm launch lines that parse.
func TestExampleLaunchCommands(t *testing.T) {
	var cfg struct {
		Agents []struct {
			Command []string `toml:"command"`
		} `toml:"agents"`
	}
	if _, err := toml.Decode(aipm.ExampleConfig, &cfg); err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, a := range cfg.Agents {
		if _, ok, err := SpecOf(a.Command); ok {
			found++
			if err != nil {
				t.Errorf("config.example.toml: %q: %v", a.Command, err)
			}
		}
	}
	if found == 0 {
		t.Error("config.example.toml shows no aipm launch command")
	}
}

// sameJSON says whether a and b hold the same value.
func sameJSON(a, b []byte) bool {
	var va, vb any
	return json.Unmarshal(a, &va) == nil && json.Unmarshal(b, &vb) == nil && reflect.DeepEqual(va, vb)
}

// TestClientsPinned: the versions aipm doctor compares a client with are
// the ones the end-to-end tests install (testdata/realclients/package.json).
func TestClientsPinned(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "realclients", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"claude", "codex"} {
		c, _ := clients.Get(name)
		if got := pkg.Dependencies[c.Package]; got != c.Tested {
			t.Errorf("%s: tested %q, but testdata/realclients pins %s at %q", name, c.Tested, c.Package, got)
		}
	}
}
