// Package mcpserver is `aipm serve`: the MCP tools an agent calls, built on
// the official MCP SDK. Every tool call goes through one gate (gate.go) that
// resolves the session, checks the level its spec names (tools.go), applies an
// unread interrupt instead of running the tool, and appends the notification
// line to the response. Rules (sessions, task transitions, interrupts) live
// in fsstore; the tools here only translate between MCP and the store.
//
// Startup does no locking and no scanning: clients may start the server
// twice, and the first response must come within milliseconds.
package mcpserver
