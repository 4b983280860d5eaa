package mcpserver_test

import (
	"aipm/fsstore"
	"fmt"
	"os"
	"testing"
	"time"
)

// Durability over HTTP: 8 agents on one aipm serve --http process, each
// sending n messages while every agent reads its own (exchange). Each
// agent reads through an MCP client of its own, one call at a time, and
// sends through another: each read passes the ack of the read before,
// which proves that answer read (links.go); the sends prove nothing and
// take nothing back. Every message is exactly once in the sender's and in
// the receiver's chat file, no line is torn, and was received exactly once
// (checkExchange). n is 200, or 10,000 with AIPM_LONG=1.
func TestHTTPDurability(t *testing.T) {
	agents, perAgent := 8, 200
	if os.Getenv("AIPM_LONG") != "" {
		perAgent = 10000
	}
	p := newProject(t)
	p.addAIAgents(agents)
	srv := p.serveHTTP()
	clients := make([]chatClient, agents)
	for i := range clients {
		id := fmt.Sprintf("a%d", i)
		cs := p.connectHTTP(srv.url, "2025-11-25", p.passkeys[id], nil)
		reads := p.connectHTTP(srv.url, "2025-11-25", p.passkeys[id], nil)
		clients[i] = chatClient{cs: cs, token: p.authenticateHeld(cs, id, fsstore.PurposeChat), reads: reads}
	}
	start := time.Now()
	sent, received := exchange(t, clients, perAgent)
	took := time.Since(start)
	checkExchange(t, p, agents, perAgent, sent, received)
	t.Logf("%d agents x %d sends over HTTP: %d sent, %d received once each, 0 lost, 0 duplicated, 0 torn, in %v (%.0f sends/s)",
		agents, perAgent, len(sent), len(received), took.Round(time.Millisecond), float64(len(sent))/took.Seconds())
}
