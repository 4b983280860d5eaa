package opencode

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"aipm/internal/clients/clientkit"
)

// TestLaunch: opencode run as aipm's agent, the prompt on stdin, the
// project's own config left unread, and aipm's config: its server, its
// plugin (a file in StateDir holding the hook command), and the access
// level's permission rules, for aipm's agent (applied after every rule of
// the user's) and at the top level.
func TestLaunch(t *testing.T) {
	state := t.TempDir()
	for _, access := range []string{clientkit.AccessRead, clientkit.AccessProject, clientkit.AccessFull} {
		cmd := Client.Launch(clientkit.Run{Access: access, Model: "p/m", Extra: []string{"--print-logs"}, Exe: "/x/aipm", HookWord: "/x/aipm",
			Prompt: `call "authenticate"`, StateDir: state, Getenv: func(string) string { return "" }})
		if want := []string{"run", "--format", "json", "--agent", "aipm", "--model", "p/m", "--print-logs"}; !slices.Equal(cmd.Args, want) {
			t.Errorf("%s: args %q, want %q", access, cmd.Args, want)
		}
		if cmd.Stdin != `call "authenticate"` || !slices.Contains(cmd.Env, "OPENCODE_DISABLE_PROJECT_CONFIG=1") {
			t.Errorf("%s: stdin %q, env %q", access, cmd.Stdin, cmd.Env)
		}
		var config struct {
			MCP        map[string]openCodeServer
			Plugin     []string
			Permission map[string]string
			Agent      map[string]struct {
				Mode       string
				Permission map[string]string
			}
		}
		for _, kv := range cmd.Env {
			if v, ok := strings.CutPrefix(kv, "OPENCODE_CONFIG_CONTENT="); ok {
				if err := json.Unmarshal([]byte(v), &config); err != nil {
					t.Fatal(err)
				}
			}
		}
		plugin := filepath.Join(state, "aipm-hooks.js")
		if !slices.Equal(config.MCP["aipm"].Command, []string{"/x/aipm", "serve"}) || !slices.Equal(config.Plugin, []string{"file://" + plugin}) ||
			!reflect.DeepEqual(config.Permission, openCodePermission[access]) || !reflect.DeepEqual(config.Agent["aipm"].Permission, openCodePermission[access]) ||
			config.Agent["aipm"].Mode != "primary" {
			t.Errorf("%s: config %+v", access, config)
		}
		if len(cmd.Files) != 1 || cmd.Files[0].Path != plugin || !strings.Contains(string(cmd.Files[0].Data), `"/x/aipm hook --client opencode"`) {
			t.Errorf("%s: files %+v", access, cmd.Files)
		}
	}
	if got := openCodePermission[clientkit.AccessRead]; got["edit"] != "deny" || got["bash"] != "deny" {
		t.Errorf("read's rules %v: want edit and bash denied", got)
	}
}
