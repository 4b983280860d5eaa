package mcpserver

import (
	"net"
	"time"
)

// SDKTools makes s register every tool through the SDK's mcp.AddTool, its
// schemas inferred from its Go types: the reference that TestServedSchemas
// and TestToolCallsMatchTheSDK compare aipm's own registration with.
func (s *Server) SDKTools() { s.sdkTools = true }

// PageLimits returns every listing tool's page limit: its default and its
// most, by tool name.
func PageLimits() map[string][2]int {
	m := map[string][2]int{}
	for _, t := range tools() {
		if t.page != (pageLimit{}) {
			m[t.tool.Name] = [2]int{t.page.def, t.page.max}
		}
	}
	return m
}

// ToolGate returns, by tool name, the level the tool requires of the
// caller's session and whether it runs while an interrupt is unread: what
// docs/tools.md says of each tool beside its listing.
func ToolGate() map[string]struct {
	Level           string
	PassesInterrupt bool
} {
	m := map[string]struct {
		Level           string
		PassesInterrupt bool
	}{}
	for _, t := range tools() {
		m[t.tool.Name] = struct {
			Level           string
			PassesInterrupt bool
		}{t.level.String(), t.passesInterrupt}
	}
	return m
}

// FailpointHandedUnwritten is the failpoint (internal/failpoint) before the
// answer that hands a session a batch is written over stdio.
const FailpointHandedUnwritten = failpointHandedUnwritten

// SetNamesSomeone makes f say which client addresses name someone (are
// bounded by themselves) for h: tests take loopback addresses for
// others' own.
func (h *HTTP) SetNamesSomeone(f func(ip net.IP) bool) { h.conns.namesSomeone = f }

// SetClock makes now the clock of h's back-off per client address.
func (h *HTTP) SetClock(now func() time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now = now
}
