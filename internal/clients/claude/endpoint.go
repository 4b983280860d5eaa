package claude

import (
	"path/filepath"

	"aipm/internal/clientconfig"
)

// endpoint is Claude Code's endpoint: it Claude Code sends to $ANTHROPIC_BASE_URL, by default
// https://api.anthropic.com, with $ANTHROPIC_API_KEY,
// $ANTHROPIC_AUTH_TOKEN, $CLAUDE_CODE_OAUTH_TOKEN, or the login claude
// saved (.credentials.json in $CLAUDE_CONFIG_DIR, default ~/.claude; the
// macOS keychain, which aipm does not read). Bedrock, Vertex and the other
// clouds it is pointed at by CLAUDE_CODE_USE_* are not looked at.
func endpoint(getenv func(string) string) clientconfig.Endpoint {
	for _, cloud := range []string{"BEDROCK", "VERTEX", "FOUNDRY", "ANTHROPIC_AWS", "ANTHROPIC_GOOGLE_CLOUD", "GATEWAY", "MANTLE"} {
		if v := getenv("CLAUDE_CODE_USE_" + cloud); v != "" && v != "0" && v != "false" {
			return clientconfig.Endpoint{Unknown: "CLAUDE_CODE_USE_" + cloud + " points it at a cloud provider"}
		}
	}
	e := clientconfig.Endpoint{URL: getenv("ANTHROPIC_BASE_URL"), From: "ANTHROPIC_BASE_URL"}
	if e.URL == "" {
		e.URL, e.From = "https://api.anthropic.com", "the default: ANTHROPIC_BASE_URL is unset"
	}
	for _, v := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"} {
		if getenv(v) != "" {
			e.Credential = v
			return e
		}
	}
	dir := getenv("CLAUDE_CONFIG_DIR")
	if dir == "" {
		dir = filepath.Join(getenv("HOME"), ".claude")
	}
	if login := filepath.Join(dir, ".credentials.json"); clientconfig.Regular(login) {
		e.Credential = login
		return e
	}
	if settings := filepath.Join(dir, "settings.json"); clientconfig.FileHas(settings, `"apiKeyHelper"`) {
		e.Credential = "apiKeyHelper in " + settings
		return e
	}
	e.NoCredential = "set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN, CLAUDE_CODE_OAUTH_TOKEN) in the agent's env or the environment aipm watch runs with, or log in with claude as the user aipm watch runs as"
	return e
}
