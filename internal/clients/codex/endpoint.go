package codex

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"aipm/internal/clientconfig"
)

// endpoint is Codex's endpoint: it codex exec sends to its model provider's base_url:
// model_provider (default openai) from $CODEX_HOME/config.toml (default
// ~/.codex/config.toml) or a -c on its command line; the openai provider
// at openai_base_url, by default https://api.openai.com/v1 (Codex 0.171.0
// no longer reads $OPENAI_BASE_URL), with $CODEX_API_KEY or the login
// codex saved (auth.json); a provider of model_providers at its base_url
// with its env_key; Ollama and LM Studio on localhost.
func endpoint(getenv func(string) string, args []string) clientconfig.Endpoint {
	c, oss := readCodexSettings(getenv, args)
	if oss {
		return clientconfig.Endpoint{Unknown: "--oss runs it against a local model server of its own choice"}
	}
	provider, _ := c.get("model_provider")
	if provider == "" {
		provider = "openai"
	}
	table := "model_providers." + provider + "."
	if baseURL, where := c.get(table + "base_url"); baseURL != "" {
		e := clientconfig.Endpoint{URL: baseURL, From: where}
		key, _ := c.get(table + "env_key")
		needs, _ := lookup(c.doc, table+"requires_openai_auth").(bool)
		switch {
		case key != "" && getenv(key) != "":
			e.Credential = key
		case key != "":
			e.NoCredential = "set " + key + " (" + table + "env_key) in the agent's env or the environment aipm watch runs with"
		case needs:
			return c.login(e)
		default:
			e.Credential = "none needed (" + strings.TrimSuffix(table, ".") + " has no env_key)"
		}
		return e
	}
	switch provider {
	case "openai":
		e := clientconfig.Endpoint{URL: "https://api.openai.com/v1", From: "the default: openai_base_url is unset in " + c.file}
		if u, where := c.get("openai_base_url"); u != "" {
			e.URL, e.From = u, where
		} else if clientconfig.FileHas(c.auth(), `"chatgpt"`) {
			e.URL, e.From = "https://chatgpt.com/backend-api/codex", "its ChatGPT login in "+c.auth()
		}
		return c.login(e)
	case "ollama":
		return clientconfig.Endpoint{URL: "http://localhost:11434/v1", From: "model_provider ollama", Credential: "none needed"}
	case "lmstudio":
		return clientconfig.Endpoint{URL: "http://localhost:1234/v1", From: "model_provider lmstudio", Credential: "none needed"}
	case "amazon-bedrock":
		return clientconfig.Endpoint{Unknown: "model_provider amazon-bedrock is a cloud provider's"}
	}
	// A provider Codex does not know, with no base_url: it cannot start.
	return clientconfig.Endpoint{From: "model_provider " + provider + " has no base_url in [model_providers." + provider + "] of " + c.file}
}

// codexSettings are the user's Codex config with the -c values of a
// command line laid over it, as codex exec reads them.
type codexSettings struct {
	getenv  func(string) string
	home    string         // codexHome
	file    string         // its config.toml
	doc     map[string]any // the settings
	onLine  map[string]bool
	profile string // -p, else profile in config.toml
}

// readCodexSettings reads the user's Codex config and args' -c KEY=VALUE
// and -p PROFILE; oss says args ask for --oss.
func readCodexSettings(getenv func(string) string, args []string) (c codexSettings, oss bool) {
	c = codexSettings{getenv: getenv, home: codexHome(getenv), doc: map[string]any{}, onLine: map[string]bool{}}
	c.file = filepath.Join(c.home, "config.toml")
	if data, err := os.ReadFile(c.file); err == nil {
		toml.Decode(string(data), &c.doc)
	}
	for i := 0; i < len(args); i++ {
		a, next := args[i], ""
		if i+1 < len(args) {
			next = args[i+1]
		}
		switch {
		case a == "--oss":
			oss = true
		case (a == "-p" || a == "--profile") && next != "":
			c.profile = next
			i++
		case (a == "-c" || a == "--config") && next != "":
			c.set(next)
			i++
		case strings.HasPrefix(a, "--config="):
			c.set(strings.TrimPrefix(a, "--config="))
		}
	}
	if c.profile == "" {
		c.profile, _ = c.doc["profile"].(string)
	}
	return c, oss
}

// set lays one -c KEY=VALUE over the settings: VALUE is TOML, or a string
// when it is not (as Codex takes it).
func (c codexSettings) set(kv string) {
	key, value, ok := strings.Cut(kv, "=")
	if !ok {
		return
	}
	var v struct{ V any }
	if _, err := toml.Decode("V = "+value, &v); err != nil {
		v.V = value
	}
	key = strings.TrimSpace(key)
	setDotted(c.doc, key, v.V)
	c.onLine[key] = true
}

// get is the string setting key (its profile's first) and where it was
// set.
func (c codexSettings) get(key string) (value, where string) {
	if c.profile != "" {
		if p, ok := lookup(c.doc, "profiles."+c.profile+"."+key).(string); ok {
			return p, "profiles." + c.profile + "." + key + " in " + c.file
		}
	}
	value, _ = lookup(c.doc, key).(string)
	if c.onLine[key] {
		return value, "-c " + key + " on its command line"
	}
	return value, key + " in " + c.file
}

// auth is the login codex saved.
func (c codexSettings) auth() string { return filepath.Join(c.home, "auth.json") }

// login is e with the credential of Codex's own login: $CODEX_API_KEY
// (codex exec's), else the login codex saved.
func (c codexSettings) login(e clientconfig.Endpoint) clientconfig.Endpoint {
	switch {
	case c.getenv("CODEX_API_KEY") != "":
		e.Credential = "CODEX_API_KEY"
	case clientconfig.Regular(c.auth()):
		e.Credential = c.auth()
	default:
		e.NoCredential = "set CODEX_API_KEY in the agent's env or the environment aipm watch runs with, or run codex login as the user aipm watch runs as"
	}
	return e
}

// lookup is the value at a dotted key of a decoded TOML document (nil
// when there is none).
func lookup(doc map[string]any, dotted string) any {
	var v any = doc
	for _, part := range strings.Split(dotted, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[part]
	}
	return v
}

// setDotted sets a dotted key of a decoded TOML document, as Codex's -c
// does.
func setDotted(doc map[string]any, dotted string, value any) {
	parts := strings.Split(dotted, ".")
	for _, part := range parts[:len(parts)-1] {
		next, ok := doc[part].(map[string]any)
		if !ok {
			next = map[string]any{}
			doc[part] = next
		}
		doc = next
	}
	doc[parts[len(parts)-1]] = value
}
