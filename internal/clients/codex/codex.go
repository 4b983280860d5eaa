// Package codex is Codex CLI (@openai/codex) to aipm, whole: its Client
// for the registry (internal/clients).
//
//   - codex.go: the Client; its command line (codex exec, aipm's server
//     and hooks as -c values), its hooks' dialect, what each access level
//     lets it do, and whether an agent's own command starts it unhooked.
//   - output.go: its --json events and its session record, read for the
//     calls its sandbox refused.
//   - config.go: mcp-config's [mcp_servers.aipm] table, its note, and
//     --write's merge into .codex/config.toml and .codex/hooks.json; the
//     entry for aipm serve --http.
//   - trust.go: whether Codex will ignore aipm's entries or skip its hooks
//     in a project (the trust in the user's config.toml), and its home.
//   - endpoint.go: where it sends its model requests, with which
//     credential (its config.toml and -c values).
package codex

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"aipm/fsstore"
	"aipm/internal/clientconfig"
	"aipm/internal/clients/clientkit"
)

// Client is Codex CLI (@openai/codex), started as codex exec.
var Client = clientkit.Client{
	Name: "codex", Title: "Codex", Program: "codex",
	Package: "@openai/codex", Tested: "0.171.0",
	Install:  "install Codex CLI (npm install -g @openai/codex)",
	Launch:   codexLaunch,
	Output:   newCodexOutput,
	Hooks:    codexDialect,
	Config:   clientkit.Config{Doc: configDoc, Note: note, Write: writeFiles, URLDoc: urlDoc},
	Trust:    trust,
	Endpoint: endpoint,
	// Codex names aipm's tools to its model as aipm serves them.
	ToolName:  func(tool string) string { return tool },
	May:       codexMay,
	RefusedBy: "its sandbox",
	Widen: func(set string, _ clientkit.Run, _ []string, _ bool) string {
		return set + " --access full lets it write outside the project too (no sandbox), or check its log for what it tried"
	},
	Unhooked: codexUnhooked,
}

// codexDialect: Codex's hooks (its hook schemas), which have no idle
// event; apply_patch is its file-writing tool.
var codexDialect = clientkit.Dialect{
	Entries: hookEvents,
	Events:  clientkit.SameEvents(),
	NoWake:  "--wake is for Claude Code's asyncRewake Stop hook; Codex has no idle event, so leave --wake out with --client codex",
	// Codex names aipm's MCP tools as Claude Code does.
	OwnToolPrefix: "mcp__" + clientconfig.ServerName + "__",
	WritingTools:  map[string]func(json.RawMessage) []string{"apply_patch": clientkit.PatchFiles},
	Deny:          clientkit.JSONDeny,
	Context:       clientkit.JSONContext,
	Block:         clientkit.JSONBlock,
}

// codexLaunch: codex exec with aipm's server and hooks given on the
// command line (a project Codex never trusted ignores .codex/), the server
// required (started before the first turn), its tools approved, the
// credential variables passed through, and the access level as the
// sandbox. aipm's hooks are its own, checked by aipm, so the run skips
// Codex's review of hooks (--dangerously-bypass-hook-trust). Its events
// come as JSON lines (--json), which aipm launch reads (codexOutput).
func codexLaunch(r clientkit.Run) clientkit.Command {
	sandbox := map[string]string{clientkit.AccessRead: "read-only", clientkit.AccessProject: "workspace-write", clientkit.AccessFull: "danger-full-access"}[r.Access]
	args := []string{"exec", "--json", "--skip-git-repo-check", "--sandbox", sandbox, "--dangerously-bypass-hook-trust"}
	set := func(key, value string) { args = append(args, "-c", key+"="+value) }
	server := "mcp_servers." + clientconfig.ServerName
	set(server+".command", tomlString(r.Exe))
	set(server+".args", tomlStrings(clientconfig.ServeArgs))
	set(server+".env_vars", tomlStrings(append(slices.Clone(clientconfig.CredentialVars), fsstore.EnvPurpose, fsstore.EnvProjectDir, fsstore.EnvRunID)))
	set(server+".default_tools_approval_mode", tomlString("approve"))
	set(server+".tool_timeout_sec", "60")
	// required: the first turn waits for the server (an optional one gets
	// about a second, then the turn starts without it), and the run fails
	// if it cannot start.
	set(server+".required", "true")
	for _, ev := range hookEvents(r.HookWord) {
		set("hooks."+ev.Name, tomlHookGroups(ev.Group))
	}
	if r.Model != "" {
		args = append(args, "--model", r.Model)
	}
	args = append(args, r.Extra...)
	return clientkit.Command{Args: append(args, r.Prompt)}
}

// codexMay is what each access level lets Codex do.
func codexMay(access string) string {
	switch access {
	case clientkit.AccessRead:
		// Codex's read-only sandbox runs commands and fails their writes.
		return "read the project and run commands that do not write; no edit"
	case clientkit.AccessFull:
		return "do anything, without asking"
	}
	return "edit files and run commands inside the project"
}

// codexUnhooked: a command that starts Codex itself (its program, or a
// shell's script that runs "codex") in a project whose .codex/hooks.json
// holds none of aipm's hooks.
func codexUnhooked(projectDir string, command []string) bool {
	if !runsCodex(command) {
		return false
	}
	hooks, _ := aipmHooks(filepath.Join(projectDir, hooksFile))
	return len(hooks) == 0
}

// runsCodex says whether a command starts Codex itself.
func runsCodex(command []string) bool {
	if len(command) == 0 {
		return false
	}
	if filepath.Base(command[0]) == "codex" {
		return true
	}
	for _, arg := range command[1:] {
		for _, word := range strings.Fields(arg) {
			if word == "codex" || strings.HasSuffix(word, "/codex") {
				return true
			}
		}
	}
	return false
}

// tomlString is s as a TOML basic string (JSON's escapes are TOML's).
func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func tomlStrings(list []string) string {
	quoted := make([]string, len(list))
	for i, s := range list {
		quoted[i] = tomlString(s)
	}
	return "[" + strings.Join(quoted, ",") + "]"
}

// tomlHookGroups is one hook event's list as a TOML inline value.
func tomlHookGroups(g clientconfig.HookGroup) string {
	var handlers []string
	for _, h := range g.Hooks {
		handlers = append(handlers, fmt.Sprintf("{type=%s,command=%s,timeout=%d}", tomlString(h.Type), tomlString(h.Command), h.Timeout))
	}
	group := "hooks=[" + strings.Join(handlers, ",") + "]"
	if g.Matcher != "" {
		group = "matcher=" + tomlString(g.Matcher) + "," + group
	}
	return "[{" + group + "}]"
}
