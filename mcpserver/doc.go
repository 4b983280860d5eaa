// Package mcpserver is `aipm serve`: the MCP tools an agent calls, built on
// the official MCP SDK. Every tool call goes through one gate (gate.go) that
// resolves the session, checks the level its spec names (tools.go), applies an
// unread interrupt instead of running the tool, and appends the notification
// line to the response. Rules (sessions, task transitions, interrupts) live
// in fsstore; the tools here only translate between MCP and the store. The
// one rule of this package's own is when what an answer hands a session
// counts as read, which depends on the link the answer went out on: the
// type links (links.go) states it and keeps it, and the transports and the
// gate only call its methods.
//
// Startup does no locking and no scanning: clients may start the server
// twice, and the first response must come within milliseconds.
package mcpserver
