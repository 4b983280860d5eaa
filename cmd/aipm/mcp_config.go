package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"

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
// (aipm watch's starter sets AIPM_PASSKEY_FILE; AIPM_PASSKEY is accepted
// for other launchers).
var credentialVars = []string{fsstore.EnvAgentID, fsstore.EnvPasskeyFile, fsstore.EnvPasskey}

// mcpClients renders a client's config for server, keyed by client name.
var mcpClients = map[string]func(mcpServer) ([]byte, error){
	"claude": claudeConfig,
	"codex":  codexConfig,
}

type mcpConfigOptions struct {
	e       *env
	Client  string // claude or codex
	Agent   string
	KeyFile string
}

func newCmdMCPConfig(e *env) *cobra.Command {
	names := make([]string, 0, len(mcpClients))
	for name := range mcpClients {
		names = append(names, name)
	}
	slices.Sort(names)
	o := &mcpConfigOptions{e: e}
	c := &cobra.Command{
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
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Client = args[0]
			return mcpConfigRun(o)
		},
	}
	c.Flags().StringVar(&o.Agent, "agent", "", "pin the server to this agent's credential (with --passkey-file)")
	c.Flags().StringVar(&o.KeyFile, "passkey-file", "", "with --agent: the 0600 file holding its passkey")
	return c
}

// mcpConfigRun prints a ready MCP config that starts this binary as the
// project's stdio server.
func mcpConfigRun(o *mcpConfigOptions) error {
	e, client, agent, keyFile := o.e, o.Client, o.Agent, o.KeyFile
	if (agent == "") != (keyFile == "") {
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
	if agent != "" {
		if err := fsstore.CheckAgentID(agent); err != nil {
			return usageError("mcp-config: --agent: %v", err)
		}
		abs, err := filepath.Abs(keyFile)
		if err != nil {
			return fmt.Errorf("mcp-config: --passkey-file: %w", err)
		}
		srv.Env = map[string]string{fsstore.EnvAgentID: agent, fsstore.EnvPasskeyFile: abs}
	}
	out, err := mcpClients[client](srv)
	if err != nil {
		return fmt.Errorf("mcp-config %s: %w", client, err)
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
