package clientconfig

import (
	"fmt"
	"net/url"
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
