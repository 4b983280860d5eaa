package clientconfig

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"
)

// Endpoint is where a client sends its model requests, and the credential
// it sends, as its own rules find them in the environment it runs with,
// its command line and the user's own files (nothing is sent anywhere).
type Endpoint struct {
	// URL is the base URL of the model API; "" when it is unset (From
	// says why) or Unknown.
	URL string
	// From says where URL came from: "ANTHROPIC_BASE_URL", "the default:
	// ANTHROPIC_BASE_URL is unset", "openai_base_url in <file>", ...
	From string
	// Credential says where the credential was found ("ANTHROPIC_API_KEY",
	// a file's path); "" when none was, and the client needs one.
	Credential string
	// NoCredential says what to do when Credential is "" and one is needed.
	NoCredential string
	// Unknown is why aipm cannot tell the endpoint ("" when it can): a
	// cloud provider's, or a provider of the client's own.
	Unknown string
}

// ModelEndpoint is the endpoint of client (claude or codex) run with
// getenv's environment and the arguments args of its own (an agent's
// arguments after --).
func ModelEndpoint(client string, getenv func(string) string, args []string) Endpoint {
	if client == "codex" {
		return codexEndpoint(getenv, args)
	}
	return claudeEndpoint(getenv)
}

// claudeEndpoint: Claude Code sends to $ANTHROPIC_BASE_URL, by default
// https://api.anthropic.com, with $ANTHROPIC_API_KEY,
// $ANTHROPIC_AUTH_TOKEN, $CLAUDE_CODE_OAUTH_TOKEN, or the login claude
// saved (.credentials.json in $CLAUDE_CONFIG_DIR, default ~/.claude; the
// macOS keychain, which aipm does not read). Bedrock, Vertex and the other
// clouds it is pointed at by CLAUDE_CODE_USE_* are not looked at.
func claudeEndpoint(getenv func(string) string) Endpoint {
	for _, cloud := range []string{"BEDROCK", "VERTEX", "FOUNDRY", "ANTHROPIC_AWS", "ANTHROPIC_GOOGLE_CLOUD", "GATEWAY", "MANTLE"} {
		if v := getenv("CLAUDE_CODE_USE_" + cloud); v != "" && v != "0" && v != "false" {
			return Endpoint{Unknown: "CLAUDE_CODE_USE_" + cloud + " points it at a cloud provider"}
		}
	}
	e := Endpoint{URL: getenv("ANTHROPIC_BASE_URL"), From: "ANTHROPIC_BASE_URL"}
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
	if login := filepath.Join(dir, ".credentials.json"); regular(login) {
		e.Credential = login
		return e
	}
	if settings := filepath.Join(dir, "settings.json"); fileHas(settings, `"apiKeyHelper"`) {
		e.Credential = "apiKeyHelper in " + settings
		return e
	}
	e.NoCredential = "set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN, CLAUDE_CODE_OAUTH_TOKEN) in the agent's env or the environment aipm watch runs with, or log in with claude as the user aipm watch runs as"
	return e
}

// codexEndpoint: codex exec sends to its model provider's base_url:
// model_provider (default openai) from $CODEX_HOME/config.toml (default
// ~/.codex/config.toml) or a -c on its command line; the openai provider
// at openai_base_url, by default https://api.openai.com/v1 (Codex 0.171.0
// no longer reads $OPENAI_BASE_URL), with $CODEX_API_KEY or the login
// codex saved (auth.json); a provider of model_providers at its base_url
// with its env_key; Ollama and LM Studio on localhost.
func codexEndpoint(getenv func(string) string, args []string) Endpoint {
	home := CodexHome(getenv)
	file := filepath.Join(home, "config.toml")
	cfg := map[string]any{}
	if data, err := os.ReadFile(file); err == nil {
		toml.Decode(string(data), &cfg)
	}
	from := map[string]string{} // a -c key -> "-c"
	profile := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		var kv string
		switch {
		case (a == "-c" || a == "--config") && i+1 < len(args):
			kv = args[i+1]
			i++
		case strings.HasPrefix(a, "--config="):
			kv = strings.TrimPrefix(a, "--config=")
		case (a == "-p" || a == "--profile") && i+1 < len(args):
			profile = args[i+1]
			i++
			continue
		case a == "--oss":
			return Endpoint{Unknown: "--oss runs it against a local model server of its own choice"}
		default:
			continue
		}
		key, value, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		var v struct{ V any }
		if _, err := toml.Decode("V = "+value, &v); err != nil {
			v.V = value // Codex takes a value that is not TOML as a string
		}
		setDotted(cfg, strings.TrimSpace(key), v.V)
		from[strings.TrimSpace(key)] = "-c " + strings.TrimSpace(key)
	}
	if profile == "" {
		profile, _ = cfg["profile"].(string)
	}
	get := func(key string) (string, string) {
		if p, ok := lookup(cfg, "profiles."+profile+"."+key).(string); ok && profile != "" {
			return p, "profiles." + profile + "." + key + " in " + file
		}
		v, _ := lookup(cfg, key).(string)
		where := key + " in " + file
		if f, ok := from[key]; ok {
			where = f + " on its command line"
		}
		return v, where
	}
	provider, _ := get("model_provider")
	if provider == "" {
		provider = "openai"
	}
	auth := filepath.Join(home, "auth.json")
	login := func(e Endpoint) Endpoint {
		switch {
		case getenv("CODEX_API_KEY") != "":
			e.Credential = "CODEX_API_KEY"
		case regular(auth):
			e.Credential = auth
		default:
			e.NoCredential = "set CODEX_API_KEY in the agent's env or the environment aipm watch runs with, or run codex login as the user aipm watch runs as"
		}
		return e
	}
	table := "model_providers." + provider + "."
	baseURL, _ := lookup(cfg, table+"base_url").(string)
	switch {
	case baseURL != "":
		e := Endpoint{URL: baseURL, From: table + "base_url in " + file}
		if f, ok := from[table+"base_url"]; ok {
			e.From = f + " on its command line"
		}
		if key, _ := lookup(cfg, table+"env_key").(string); key != "" {
			if getenv(key) != "" {
				e.Credential = key
			} else {
				e.NoCredential = "set " + key + " (model_providers." + provider + ".env_key) in the agent's env or the environment aipm watch runs with"
			}
			return e
		}
		if needs, _ := lookup(cfg, table+"requires_openai_auth").(bool); needs {
			return login(e)
		}
		e.Credential = "none needed (model_providers." + provider + " has no env_key)"
		return e
	case provider == "openai":
		e := Endpoint{URL: "https://api.openai.com/v1", From: "the default: openai_base_url is unset in " + file}
		if u, where := get("openai_base_url"); u != "" {
			e.URL, e.From = u, where
		} else if fileHas(auth, `"chatgpt"`) {
			e.URL, e.From = "https://chatgpt.com/backend-api/codex", "its ChatGPT login in "+auth
		}
		return login(e)
	case provider == "ollama":
		return Endpoint{URL: "http://localhost:11434/v1", From: "model_provider ollama", Credential: "none needed"}
	case provider == "lmstudio":
		return Endpoint{URL: "http://localhost:1234/v1", From: "model_provider lmstudio", Credential: "none needed"}
	case provider == "amazon-bedrock":
		return Endpoint{Unknown: "model_provider amazon-bedrock is a cloud provider's"}
	}
	// A provider Codex does not know, with no base_url: it cannot start.
	return Endpoint{From: "model_provider " + provider + " has no base_url in [model_providers." + provider + "] of " + file}
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

// regular says whether path is a regular file.
func regular(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// fileHas says whether the file at path holds text (a small user file).
func fileHas(path, text string) bool {
	data, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(data), text)
}
