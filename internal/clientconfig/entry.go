package clientconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"aipm/fsstore"
	"aipm/internal/lockedfile"
	"aipm/internal/shell"
)

// Server is how an MCP client starts `aipm serve` for one project.
type Server struct {
	Command        string            `json:"command" toml:"command"`
	Args           []string          `json:"args" toml:"args"`
	Env            map[string]string `json:"env,omitempty" toml:"env,omitempty"`
	EnvVars        []string          `json:"-" toml:"env_vars,omitempty"`
	ToolTimeoutSec int               `json:"-" toml:"tool_timeout_sec"`
	// ApprovalMode "approve": Codex runs aipm's tools without asking, which
	// `codex exec` (approval policy never) needs to call any tool that writes.
	ApprovalMode string `json:"-" toml:"default_tools_approval_mode"`
	// HookCommand is the command word of aipm's client hooks (HookWord).
	HookCommand string `json:"-" toml:"-"`
	// Remote: the entry runs ssh to the home machine (mcp-config --remote),
	// with no credential variables and no hooks.
	Remote bool `json:"-" toml:"-"`
}

// ServerName is the name of aipm's entry in every client's config; Claude
// Code names its tools mcp__aipm__<tool>.
const ServerName = "aipm"

// ServeArgs start the server with no --dir: clients start it in the
// project (or one of its directories), and aipm serve finds the project
// like every aipm command, so the entry holds no path and survives a
// clone or a move.
var ServeArgs = []string{"serve"}

// CredentialVars are what aipm serve reads its agent's credential from
// (aipm watch's starter sets AIPM_PASSKEY_FILE; AIPM_PASSKEY is accepted
// for other launchers).
var CredentialVars = []string{fsstore.EnvAgentID, fsstore.EnvPasskeyFile, fsstore.EnvPasskey}

// AipmCommand is the command word of the entries mcp-config makes (the
// server's command and the hooks' "<word> hook ..."): "aipm" when an aipm
// is on PATH, so that the entries hold no path of this machine (warning
// when that aipm is not this binary: the client will start the one on
// PATH); else this binary's absolute path, with a warning on stderr.
// path is the PATH value.
func AipmCommand(path string, stderr io.Writer) string {
	exe, err := os.Executable()
	if err == nil {
		if resolved, err := filepath.EvalSymlinks(exe); err == nil {
			exe = resolved
		}
	}
	onPath := shell.LookPath(path, ServerName)
	switch {
	case onPath != "" && exe != "" && !shell.SameFile(onPath, exe):
		fmt.Fprintf(stderr, "aipm: warning: the entries start the aipm on PATH, %s, which is not this binary (%s)\n", onPath, exe)
		return ServerName
	case onPath != "":
		return ServerName
	case exe == "":
		fmt.Fprintf(stderr, "aipm: warning: aipm is not on PATH and this binary's path is unknown (%v): put aipm on PATH\n", err)
		return ServerName
	case strings.Contains(exe, string(filepath.Separator)+"go-build"):
		fmt.Fprintf(stderr, "aipm: warning: %s is a temporary build (go run): install aipm with go install and run mcp-config again\n", exe)
	default:
		fmt.Fprintf(stderr, "aipm: warning: aipm is not on PATH, so the entries name %s, which break if the binary moves: put aipm on PATH and run mcp-config again\n", exe)
	}
	return exe
}

// claudeServer is the entry for Claude Code: without a pinned credential,
// the credential variables expanded from Claude Code's environment
// (${VAR:-} is empty when unset).
func claudeServer(s Server) Server {
	if s.Env == nil && !s.Remote {
		s.Env = map[string]string{}
		for _, v := range CredentialVars {
			s.Env[v] = "${" + v + ":-}"
		}
	}
	return s
}

// ClaudeConfig is the .mcp.json document for Claude Code.
func ClaudeConfig(s Server) ([]byte, error) {
	return lockedfile.EncodeDoc(map[string]map[string]Server{"mcpServers": {ServerName: claudeServer(s)}})
}

// claudeSettings are the .claude/settings.json keys that let Claude Code
// start the project's server without asking and claude -p call its tools.
const claudeSettingsDoc = `{"enabledMcpjsonServers": ["aipm"], "permissions": {"allow": ["mcp__aipm"]}}`

// ClaudeNote is what mcp-config says of Claude Code's document on stderr.
func ClaudeNote(s Server) string {
	var b strings.Builder
	b.WriteString("aipm: stdout is the .mcp.json document for the project root; aipm mcp-config claude --write merges it\n" +
		"into .mcp.json and enables the server in .claude/settings.json, keeping what else they hold.\n" +
		"The settings .claude/settings.json needs (claude -p asks nothing): " + claudeSettingsDoc + "\n" +
		"--write also merges aipm's hooks (" + hookCommand(s.HookCommand, "claude") + " on " + hookEventNames(ClaudeHookEvents(s.HookCommand)) + ")\n" +
		"into .claude/settings.json's \"hooks\", so that an interrupt reaches a model that is not calling aipm.\n")
	if s.Env == nil {
		b.WriteString("aipm serve takes the agent's credential from Claude Code's environment, so the passkey never\n" +
			"reaches the model: AIPM_AGENT_ID=coder AIPM_PASSKEY_FILE=$HOME/.config/aipm/coder.key claude\n")
	} else {
		b.WriteString("This entry is for agent " + s.Env[fsstore.EnvAgentID] + " only: use it as .mcp.json or with claude --mcp-config FILE.\n")
	}
	return b.String()
}

// codexTable is the [mcp_servers.aipm] table (and its env subtable) for
// Codex CLI's config.toml.
func codexTable(s Server) ([]byte, error) {
	var buf bytes.Buffer
	if s.Env == nil && !s.Remote {
		s.EnvVars = CredentialVars
	}
	env := s.Env
	s.Env = nil
	buf.WriteString("[mcp_servers." + ServerName + "]\n")
	if err := toml.NewEncoder(&buf).Encode(s); err != nil {
		return nil, err
	}
	if env != nil {
		buf.WriteString("\n[mcp_servers." + ServerName + ".env]\n")
		if err := toml.NewEncoder(&buf).Encode(env); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// CodexConfig is the TOML document for Codex: the table alone.
func CodexConfig(s Server) ([]byte, error) { return codexTable(s) }

// CodexNote is what mcp-config says of Codex's table on stderr.
func CodexNote(s Server) string {
	var b strings.Builder
	b.WriteString("aipm: stdout is aipm's table for the project's .codex/config.toml (Codex reads it in a trusted\n" +
		"project) or ~/.codex/config.toml; aipm mcp-config codex --write merges it into .codex/config.toml,\n" +
		"and aipm's hooks (" + hookCommand(s.HookCommand, "codex") + " on " + hookEventNames(CodexHookEvents(s.HookCommand)) + ")\n" +
		"into .codex/hooks.json. Codex runs a project's hooks only once trusted (/hooks in codex), else\n" +
		"skips them silently; aipm doctor says whether they are.\n")
	if s.Env == nil {
		b.WriteString("Codex passes AIPM_AGENT_ID and AIPM_PASSKEY_FILE from its environment to aipm serve, so the\n" +
			"passkey never reaches the model: AIPM_AGENT_ID=coder AIPM_PASSKEY_FILE=$HOME/.config/aipm/coder.key codex\n")
	} else {
		b.WriteString("This entry is for agent " + s.Env[fsstore.EnvAgentID] + " only.\n")
	}
	return b.String()
}

// FileChange is what --write does to one file: its path and a sentence,
// or an empty what when the file already holds the entry; old and data
// are its content before and after (old nil when it is created).
type FileChange struct {
	path    string // absolute
	name    string // relative to the project, for messages
	created bool
	what    string
	old     []byte
	data    []byte
}

// printChanges says what --write changed, file by file, with paths
// relative to the working directory when they are below it.
func printChanges(w io.Writer, project string, changes []FileChange) error {
	wd, _ := os.Getwd()
	var out bytes.Buffer
	changed := false
	for _, c := range changes {
		path := c.path
		if rel, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(rel, "..") {
			path = rel
		}
		switch {
		case c.what == "":
			fmt.Fprintf(&out, "unchanged %s: it already holds aipm's entry\n", path)
		case c.created:
			changed = true
			fmt.Fprintf(&out, "created %s: %s\n", path, c.what)
		default:
			changed = true
			fmt.Fprintf(&out, "updated %s: %s\n", path, c.what)
		}
	}
	if !changed {
		fmt.Fprintf(&out, "nothing to change: %s is already set up\n", filepath.Base(project))
	}
	_, err := io.Copy(w, &out)
	return err
}

// readOptional reads path; a missing file is empty.
func readOptional(path string) ([]byte, bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	return data, err == nil, err
}
