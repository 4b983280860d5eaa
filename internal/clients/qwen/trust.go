package qwen

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"aipm/internal/clientconfig"
)

// Qwen Code starts a project's MCP server (.qwen/settings.json, scope
// "workspace") only once the user approved it for that project: its
// mcpApprovals.json ($QWEN_CODE_MCP_APPROVALS_PATH, else
// $QWEN_HOME/mcpApprovals.json, else ~/.qwen/mcpApprovals.json) maps the
// project's folder to {server: {hash, status}}, the hash binding the
// approval to the entry as it was (an entry changed since is pending
// again, which aipm does not recompute). qwen -p never asks: a pending
// server is left out, silently.

// approvalsPath is where Qwen Code records approved MCP servers.
func approvalsPath(getenv func(string) string) string {
	if p := getenv("QWEN_CODE_MCP_APPROVALS_PATH"); p != "" {
		return p
	}
	if home := getenv("QWEN_HOME"); home != "" {
		return filepath.Join(home, "mcpApprovals.json")
	}
	return filepath.Join(getenv("HOME"), ".qwen", "mcpApprovals.json")
}

// trust is why Qwen Code will leave out aipm's server of the
// project's .qwen/settings.json, or "" when the project has no aipm entry
// for it or the user approved it there.
func trust(getenv func(string) string, project string) string {
	dirs := clientconfig.ProjectDirs(project)
	data, missing, err := clientconfig.ReadUserFile(filepath.Join(dirs[0], settingsFile))
	if err != nil {
		return fmt.Sprintf("aipm cannot tell whether Qwen Code uses aipm here: %v: fix it by hand", err)
	}
	var settings struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	if missing || json.Unmarshal(data, &settings) != nil || settings.MCPServers[clientconfig.ServerName] == nil {
		return ""
	}
	path := approvalsPath(getenv)
	approvals, missing, err := clientconfig.ReadUserFile(path)
	if err != nil {
		return fmt.Sprintf("aipm cannot tell whether Qwen Code approved aipm's server here: %v: fix it", err)
	}
	var records map[string]map[string]struct {
		Status string `json:"status"`
	}
	if !missing {
		if err := json.Unmarshal(approvals, &records); err != nil {
			return fmt.Sprintf("aipm cannot tell whether Qwen Code approved aipm's server here: %s is not valid JSON (%v): fix it", path, err)
		}
	}
	for _, dir := range dirs {
		if records[dir][clientconfig.ServerName].Status == "approved" {
			return ""
		}
	}
	return fmt.Sprintf("Qwen Code starts the project's MCP servers only once approved, and qwen -p leaves a pending one out silently (%s records no approval of aipm's for %s): run qwen mcp approve %s in %s",
		path, clientconfig.Resolved(dirs), clientconfig.ServerName, clientconfig.Resolved(dirs))
}
