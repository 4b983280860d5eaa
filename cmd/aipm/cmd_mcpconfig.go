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
)

// mcpServer is how an MCP client starts `aipm serve` for one project.
type mcpServer struct {
	Command        string   `json:"command" toml:"command"`
	Args           []string `json:"args" toml:"args"`
	ToolTimeoutSec int      `json:"-" toml:"tool_timeout_sec"`
}

// mcpClients renders a client's config for server, keyed by client name.
var mcpClients = map[string]func(mcpServer) ([]byte, error){
	"claude": claudeConfig,
	"codex":  codexConfig,
}

// runMCPConfig prints a ready MCP config that starts this binary as the
// project's stdio server.
func runMCPConfig(ctx context.Context, e *env, args []string) error {
	fs := e.flags("mcp-config")
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
	out, err := render(mcpServer{Command: exe, Args: []string{"--dir", store.ProjectDir(), "serve"}, ToolTimeoutSec: 60})
	if err != nil {
		return fmt.Errorf("mcp-config %s: %w", pos[0], err)
	}
	_, err = e.stdout.Write(out)
	return err
}

// claudeConfig is a .mcp.json document for Claude Code.
func claudeConfig(s mcpServer) ([]byte, error) {
	doc := map[string]map[string]mcpServer{"mcpServers": {"aipm": s}}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	err := enc.Encode(doc)
	return buf.Bytes(), err
}

// codexConfig is a table for Codex CLI's config.toml.
func codexConfig(s mcpServer) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString("# aipm's MCP server for this project: add it to the project's .codex/config.toml\n# (a trusted project) or to ~/.codex/config.toml\n")
	buf.WriteString("[mcp_servers.aipm]\n")
	err := toml.NewEncoder(&buf).Encode(s)
	return buf.Bytes(), err
}
