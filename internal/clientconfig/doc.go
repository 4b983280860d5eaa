// Package clientconfig is what aipm writes into and reads from the files of
// the agents' own CLIs, Claude Code and Codex: the MCP server entry that
// starts aipm serve and aipm's hooks, and the trust each client records for
// a project.
//
//   - entry.go: the server entry (Server) and each client's one document
//     and note (Clients); the command word the entries name (AipmCommand).
//   - hooks.go: aipm's hooks for each client (ClaudeHookEvents,
//     CodexHookEvents, HookWord), and which hook of a file is aipm's.
//   - merge.go: aipm's entries merged into .mcp.json, .claude/settings.json,
//     .codex/config.toml and .codex/hooks.json, keeping everything else.
//   - write.go: mcp-config --write: every file changed or none (Write).
//   - url.go, remote.go: the entries for aipm serve --http and over ssh.
//   - trust.go, trust_claude.go, trust_codex.go: whether a client will
//     ignore aipm's entries in a project (Client.Trust), said by aipm doctor
//     and after mcp-config --write, one sentence with the fix.
//
// It runs nothing and prints only what Write and AipmCommand are given.
package clientconfig
