// Package clientconfig is the mechanics several clients share for what
// aipm writes into and reads from the files of the agents' own CLIs: the
// MCP server entry that starts aipm serve (Server), aipm's hooks
// (HookEvent, HookWord) and which hook of a file is aipm's, the merge of
// aipm's entries into a JSON file keeping everything else (JSONObject,
// MergeJSONFile, MergeHooks), the write of every changed file or none
// (Write), the endpoint a client sends its model requests to (Endpoint),
// and the helpers of the trust each client records for a project. What is
// one client's (its documents, its files, its trust, its endpoint) is in
// its folder under internal/clients.
//
//   - entry.go: the server entry (Server), the command word the entries
//     name (AipmCommand), and a file's change (FileChange).
//   - hooks.go: aipm's hook entries (HookEvent, HookCommand, HookWord,
//     HooksDocument), which hook of a file is aipm's (IsAipmHook), and
//     their merge into a file's "hooks" (MergeHooks).
//   - merge.go: a JSON object kept in order (JSONObject) and a project's
//     file merged into (MergeJSONFile, ReadTarget).
//   - write.go: mcp-config --write: every file changed or none (Write).
//   - url.go, remote.go: what the entries for aipm serve --http and over
//     ssh share (CheckURL, URLDoc, RemoteServer).
//   - endpoint.go: a client's model endpoint (Endpoint).
//   - trust.go: what the clients' trust checks share (ProjectDirs,
//     GitRoots, ReadUserFile): whether a client will ignore aipm's entries
//     in a project (clientkit.Client.Trust), said by aipm doctor and after
//     mcp-config --write, one sentence with the fix.
//
// It runs nothing and prints only what Write and AipmCommand are given.
package clientconfig
