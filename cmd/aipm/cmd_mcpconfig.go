package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"aipm/fsstore"
)

// mcpServer is how an MCP client starts `aipm serve` for one project.
type mcpServer struct {
	Command        string            `json:"command" toml:"command"`
	Args           []string          `json:"args" toml:"args"`
	Env            map[string]string `json:"env,omitempty" toml:"env,omitempty"`
	EnvVars        []string          `json:"-" toml:"env_vars,omitempty"`
	ToolTimeoutSec int               `json:"-" toml:"tool_timeout_sec"`
	// ApprovalMode "approve": Codex runs aipm's tools without asking, which
	// `codex exec` (approval policy never) needs to call any tool that writes.
	ApprovalMode string `json:"-" toml:"default_tools_approval_mode"`
}

// credentialVars are what aipm serve reads its agent's credential from
// (AIPM_PASSKEY is what aipm's own process starter sets).
var credentialVars = []string{"AIPM_AGENT_ID", "AIPM_PASSKEY_FILE", "AIPM_PASSKEY"}

// mcpClients renders a client's config for server, keyed by client name.
var mcpClients = map[string]func(mcpServer) ([]byte, error){
	"claude": claudeConfig,
	"codex":  codexConfig,
}

// runMCPConfig prints a ready MCP config that starts this binary as the
// project's stdio server.
func runMCPConfig(ctx context.Context, e *env, args []string) error {
	fs := e.flags("mcp-config")
	agent := fs.String("agent", "", "pin the server to this agent's credential")
	keyFile := fs.String("passkey-file", "", "with --agent: the 0600 file holding its passkey")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("mcp-config needs a client: aipm mcp-config claude|codex")
	}
	render, ok := mcpClients[pos[0]]
	if !ok {
		return usageError("mcp-config: unknown client %q: use claude or codex", pos[0])
	}
	if (*agent == "") != (*keyFile == "") {
		return usageError("mcp-config: --agent and --passkey-file go together: give both, or neither to take them from the client's environment")
	}
	store, _, err := e.open()
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("mcp-config: find the aipm binary: %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	if strings.Contains(exe, string(filepath.Separator)+"go-build") {
		fmt.Fprintf(e.stderr, "aipm: warning: %s is a temporary build (go run): install aipm with go install and run mcp-config again\n", exe)
	}
	srv := mcpServer{Command: exe, Args: []string{"--dir", store.ProjectDir(), "serve"}, ToolTimeoutSec: 60, ApprovalMode: "approve"}
	if *agent != "" {
		if err := fsstore.CheckAgentID(*agent); err != nil {
			return usageError("mcp-config: --agent: %v", err)
		}
		abs, err := filepath.Abs(*keyFile)
		if err != nil {
			return fmt.Errorf("mcp-config: --passkey-file: %w", err)
		}
		srv.Env = map[string]string{"AIPM_AGENT_ID": *agent, "AIPM_PASSKEY_FILE": abs}
	}
	out, err := render(srv)
	if err != nil {
		return fmt.Errorf("mcp-config %s: %w", pos[0], err)
	}
	_, err = e.stdout.Write(out)
	return err
}

// claudeConfig is the .mcp.json document for Claude Code, then the
// settings that let it start the server and call its tools unasked.
func claudeConfig(s mcpServer) ([]byte, error) {
	var buf bytes.Buffer
	if s.Env == nil {
		// Claude Code expands ${VAR:-} from its own environment.
		s.Env = map[string]string{}
		for _, v := range credentialVars {
			s.Env[v] = "${" + v + ":-}"
		}
		buf.WriteString("# .mcp.json at the project root. aipm serve takes the agent's credential from\n" +
			"# AIPM_AGENT_ID and AIPM_PASSKEY_FILE in Claude Code's environment, so the passkey\n" +
			"# never reaches the model: AIPM_AGENT_ID=coder AIPM_PASSKEY_FILE=$HOME/.config/aipm/coder.key claude\n")
	} else {
		buf.WriteString("# .mcp.json at the project root (or a file for claude --mcp-config), for agent " + s.Env["AIPM_AGENT_ID"] + " only\n")
	}
	if err := writeJSON(&buf, map[string]map[string]mcpServer{"mcpServers": {"aipm": s}}); err != nil {
		return nil, err
	}
	buf.WriteString("# .claude/settings.json (or .claude/settings.local.json): start the project's aipm\n" +
		"# server without asking, and let claude -p call its tools\n")
	err := writeJSON(&buf, map[string]any{
		"enabledMcpjsonServers": []string{"aipm"},
		"permissions":           map[string][]string{"allow": {"mcp__aipm"}},
	})
	return buf.Bytes(), err
}

func writeJSON(buf *bytes.Buffer, doc any) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// codexConfig is a table for Codex CLI's config.toml.
func codexConfig(s mcpServer) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString("# aipm's MCP server for this project: add it to the project's .codex/config.toml\n# (a trusted project) or to ~/.codex/config.toml.\n")
	if s.Env == nil {
		s.EnvVars = credentialVars
		buf.WriteString("# Codex passes AIPM_AGENT_ID and AIPM_PASSKEY_FILE from its environment to aipm serve,\n" +
			"# so the passkey never reaches the model: AIPM_AGENT_ID=coder AIPM_PASSKEY_FILE=$HOME/.config/aipm/coder.key codex\n")
	} else {
		buf.WriteString("# For agent " + s.Env["AIPM_AGENT_ID"] + " only.\n")
	}
	env := s.Env
	s.Env = nil
	buf.WriteString("[mcp_servers.aipm]\n")
	if err := toml.NewEncoder(&buf).Encode(s); err != nil {
		return nil, err
	}
	if env != nil {
		buf.WriteString("\n[mcp_servers.aipm.env]\n")
		if err := toml.NewEncoder(&buf).Encode(env); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}
