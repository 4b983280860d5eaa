package clientconfig

import (
	"aipm/internal/lockedfile"
	"bytes"
	"fmt"
	"net/url"

	"github.com/BurntSushi/toml"
)

// The entries for aipm serve --http: the client connects to URL with the
// agent's passkey as its bearer token, taken from the client's environment
// (AIPM_PASSKEY), never written into the file. No hooks: aipm hook runs
// where the client runs and needs the project's .ai-pm/, which is on the
// home machine.

// urlEnvVar is the client's environment variable holding the passkey.
const urlEnvVar = "AIPM_PASSKEY"

// CheckURL refuses what is not an http(s) URL (a usage mistake).
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("mcp-config: --url %q is not an http(s) URL: use the line aipm serve --http printed, e.g. http://127.0.0.1:43121/mcp", raw)
	}
	return nil
}

// ClaudeURLDoc is Claude Code's .mcp.json entry for aipm serve --http
// at raw, its bearer token in the variable tokenVar.
func ClaudeURLDoc(raw, tokenVar string) ([]byte, error) {
	entry := map[string]any{"type": "http", "url": raw, "headers": map[string]string{"Authorization": "Bearer ${" + tokenVar + "}"}}
	return lockedfile.EncodeDoc(map[string]map[string]any{"mcpServers": {ServerName: entry}})
}

// CodexURLDoc is Codex's config.toml table for aipm serve --http at raw,
// its bearer token in the variable tokenVar.
func CodexURLDoc(raw, tokenVar string) ([]byte, error) {
	var buf bytes.Buffer
	entry := map[string]any{"url": raw, "bearer_token_env_var": tokenVar, "tool_timeout_sec": 60, "default_tools_approval_mode": "approve"}
	if err := toml.NewEncoder(&buf).Encode(map[string]map[string]any{"mcp_servers": {ServerName: entry}}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// URLDoc is the one document for client at raw (doc: the client's own,
// clients.Config.URLDoc), and the note for stderr.
func URLDoc(client, raw string, doc func(raw, tokenVar string) ([]byte, error)) ([]byte, string, error) {
	out, err := doc(raw, urlEnvVar)
	if err != nil {
		return nil, "", err
	}
	note := fmt.Sprintf("aipm: stdout is the %s entry for aipm serve --http at %s; the agent is whoever's passkey the client sends:\n"+
		"start the client with %s set to the passkey aipm agent add printed (it is never written into the file).\n"+
		"No hooks: aipm hook runs beside the client and needs the project's .ai-pm/, which is on the home machine.\n", client, raw, urlEnvVar)
	return out, note, nil
}
