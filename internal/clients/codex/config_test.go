package codex

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/BurntSushi/toml"

	"aipm/internal/clientconfig"
)

// TestMCPConfigRoundTrip: Codex's table decodes back to the same command,
// args and credential environment, even for paths that need quoting.
func TestMCPConfigRoundTrip(t *testing.T) {
	base := clientconfig.Server{Command: `/opt/a "b"\c/aipm`, Args: []string{"--dir", "/home/x/プロジェクト \\ 'q'\n", "serve"}, ToolTimeoutSec: 60, ApprovalMode: "approve"}
	pinned := base
	pinned.Env = map[string]string{"AIPM_AGENT_ID": "coder", "AIPM_PASSKEY_FILE": `/home/x/"k".key`}
	withEnvVars := base
	withEnvVars.EnvVars = clientconfig.CredentialVars
	for name, tc := range map[string]struct {
		in, codex clientconfig.Server
	}{
		"from the client's environment": {base, withEnvVars},
		"pinned to one agent":           {pinned, pinned},
	} {
		t.Run(name, func(t *testing.T) {
			codex, err := configDoc(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			var cfg struct {
				MCPServers map[string]clientconfig.Server `toml:"mcp_servers"`
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

// TestTrustLookups: Codex looks trust up for the folder, then the .git's
// directory, then the main checkout; the first entry decides, and no
// other parent counts. It records trust for a linked worktree under the
// main checkout.
func TestTrustLookups(t *testing.T) {
	root := t.TempDir()
	mkdir := func(rel string) string {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := mkdir("plain/app")
	repo := mkdir("repo")
	mkdir("repo/.git/worktrees/feature")
	sub := mkdir("repo/src/app")
	wt := mkdir("wt")
	if err := os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+filepath.Join(repo, ".git", "worktrees", "feature")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := &codexUserConfig{Projects: map[string]struct {
		TrustLevel string `toml:"trust_level"`
	}{root: {"trusted"}, repo: {"trusted"}}}
	for dir, want := range map[string]string{plain: "", sub: "trusted", wt: "trusted"} {
		if got, _ := cfg.trust([]string{dir}); got != want {
			t.Errorf("Codex trust of %s = %q, want %q", dir, got, want)
		}
	}
	cfg.Projects[wt] = struct {
		TrustLevel string `toml:"trust_level"`
	}{"untrusted"}
	if got, key := cfg.trust([]string{wt}); got != "untrusted" || key != wt {
		t.Errorf("Codex trust of %s = %q under %q, want its own entry, untrusted", wt, got, key)
	}
	if got := trustKey(wt); got != repo {
		t.Errorf("Codex records trust for %s under %q, want the main checkout %q", wt, got, repo)
	}
}
