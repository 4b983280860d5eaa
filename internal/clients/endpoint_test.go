package clients

import (
	"os"
	"path/filepath"
	"testing"

	"aipm/internal/clientconfig"
)

// TestModelEndpoint: where each client sends its model requests and with
// which credential, by its own rules: the environment, the user's files,
// its command line.
func TestModelEndpoint(t *testing.T) {
	home := t.TempDir()
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(codexHome, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(codexHome, "config.toml")
	for _, tc := range []struct {
		name   string
		client string
		env    map[string]string
		args   []string
		config string // Codex's config.toml
		files  []string
		want   clientconfig.Endpoint
	}{
		{name: "claude's default, no credential", client: "claude",
			want: clientconfig.Endpoint{URL: "https://api.anthropic.com", From: "the default: ANTHROPIC_BASE_URL is unset", NoCredential: "set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN, CLAUDE_CODE_OAUTH_TOKEN) in the agent's env or the environment aipm watch runs with, or log in with claude as the user aipm watch runs as"}},
		{name: "claude's base URL and token", client: "claude", env: map[string]string{"ANTHROPIC_BASE_URL": "http://gw:8080", "ANTHROPIC_AUTH_TOKEN": "t"},
			want: clientconfig.Endpoint{URL: "http://gw:8080", From: "ANTHROPIC_BASE_URL", Credential: "ANTHROPIC_AUTH_TOKEN"}},
		{name: "claude's login", client: "claude", files: []string{".claude/.credentials.json"},
			want: clientconfig.Endpoint{URL: "https://api.anthropic.com", From: "the default: ANTHROPIC_BASE_URL is unset", Credential: filepath.Join(home, ".claude", ".credentials.json")}},
		{name: "claude on Bedrock", client: "claude", env: map[string]string{"CLAUDE_CODE_USE_BEDROCK": "1"},
			want: clientconfig.Endpoint{Unknown: "CLAUDE_CODE_USE_BEDROCK points it at a cloud provider"}},
		{name: "gemini's default and key", client: "gemini", env: map[string]string{"GEMINI_API_KEY": "k"},
			want: clientconfig.Endpoint{URL: "https://generativelanguage.googleapis.com", From: "the default: GOOGLE_GEMINI_BASE_URL is unset", Credential: "GEMINI_API_KEY"}},
		{name: "gemini's base URL, no key", client: "gemini", env: map[string]string{"GOOGLE_GEMINI_BASE_URL": "http://gw:1"},
			want: clientconfig.Endpoint{URL: "http://gw:1", From: "GOOGLE_GEMINI_BASE_URL", NoCredential: "set GEMINI_API_KEY in the agent's env or the environment aipm watch runs with: aipm launch starts Gemini CLI with a home of aipm's, so a Google login saved by gemini (~/.gemini) is not used (create a key at aistudio.google.com)"}},
		{name: "gemini on Vertex AI", client: "gemini", env: map[string]string{"GOOGLE_GENAI_USE_VERTEXAI": "true"},
			want: clientconfig.Endpoint{Unknown: "GOOGLE_GENAI_USE_VERTEXAI points it at Vertex AI"}},
		{name: "codex's default", client: "codex", env: map[string]string{"OPENAI_BASE_URL": "http://ignored", "CODEX_API_KEY": "k"},
			want: clientconfig.Endpoint{URL: "https://api.openai.com/v1", From: "the default: openai_base_url is unset in " + config, Credential: "CODEX_API_KEY"}},
		{name: "codex's openai_base_url and login", client: "codex", config: `openai_base_url = "http://gw/v1"`, files: []string{".codex/auth.json"},
			want: clientconfig.Endpoint{URL: "http://gw/v1", From: "openai_base_url in " + config, Credential: filepath.Join(codexHome, "auth.json")}},
		{name: "codex's -c over its config", client: "codex", config: `openai_base_url = "http://gw/v1"`, args: []string{"-c", `openai_base_url="http://other/v1"`},
			want: clientconfig.Endpoint{URL: "http://other/v1", From: "-c openai_base_url on its command line", NoCredential: "set CODEX_API_KEY in the agent's env or the environment aipm watch runs with, or run codex login as the user aipm watch runs as"}},
		{name: "codex's provider of its own", client: "codex", env: map[string]string{"GW_KEY": "k"},
			config: "model_provider = \"gw\"\n[model_providers.gw]\nbase_url = \"http://gw:1/v1\"\nenv_key = \"GW_KEY\"\n",
			want:   clientconfig.Endpoint{URL: "http://gw:1/v1", From: "model_providers.gw.base_url in " + config, Credential: "GW_KEY"}},
		{name: "codex's profile", client: "codex", args: []string{"--profile", "local"},
			config: "[profiles.local]\nmodel_provider = \"ollama\"\n",
			want:   clientconfig.Endpoint{URL: "http://localhost:11434/v1", From: "model_provider ollama", Credential: "none needed"}},
		{name: "codex's provider without base_url", client: "codex", args: []string{"--config=model_provider=gw"},
			want: clientconfig.Endpoint{From: "model_provider gw has no base_url in [model_providers.gw] of " + config}},
		{name: "codex --oss", client: "codex", args: []string{"--oss"},
			want: clientconfig.Endpoint{Unknown: "--oss runs it against a local model server of its own choice"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, f := range []string{".claude/.credentials.json", ".codex/auth.json", ".codex/config.toml"} {
				os.Remove(filepath.Join(home, f))
			}
			for _, f := range tc.files {
				write(filepath.Join(home, f), "{}")
			}
			if tc.config != "" {
				write(config, tc.config)
			}
			getenv := func(k string) string {
				if k == "HOME" {
					return home
				}
				return tc.env[k]
			}
			if got := mustGet(t, tc.client).Endpoint(getenv, tc.args); got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
