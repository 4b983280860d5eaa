package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"
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

func newCmdMCPConfig(e *env) *cobra.Command {
	names := make([]string, 0, len(mcpClients))
	for name := range mcpClients {
		names = append(names, name)
	}
	slices.Sort(names)
	return &cobra.Command{
		Use:   "mcp-config claude|codex",
		Short: "Print the MCP server entry that starts aipm serve for this project",
		Long: `Print a ready MCP server entry for an agent's CLI: the absolute path of this
aipm binary and the project's --dir. claude prints a .mcp.json document to
merge into the project's .mcp.json; codex prints a [mcp_servers.aipm] table
for the project's .codex/config.toml or ~/.codex/config.toml.`,
		Example:   "  aipm mcp-config claude > .mcp.json\n  aipm mcp-config codex",
		ValidArgs: names,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError("mcp-config needs a client: aipm mcp-config claude|codex")
			}
			if _, ok := mcpClients[args[0]]; !ok {
				return usageError("mcp-config: unknown client %q: use claude or codex", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return mcpConfigRun(e, args[0]) },
	}
}

// mcpConfigRun prints a ready MCP config that starts this binary as the
// project's stdio server.
func mcpConfigRun(e *env, client string) error {
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
	out, err := mcpClients[client](mcpServer{Command: exe, Args: []string{"--dir", store.ProjectDir(), "serve"}, ToolTimeoutSec: 60})
	if err != nil {
		return fmt.Errorf("mcp-config %s: %w", client, err)
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
