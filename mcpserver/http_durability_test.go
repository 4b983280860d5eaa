package mcpserver_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"aipm/fsstore"
)

// Durability over HTTP: 8 agents on one aipm serve --http process, each
// with its own HTTP client (its own connections), each sending n messages
// while every agent reads its own (exchange). Every message is exactly
// once in the sender's and in the receiver's chat file, no line is torn,
// and was received exactly once (checkExchange). n is 200, or 10,000 with
// AIPM_LONG=1.
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
		clients[i] = chatClient{cs, p.authenticateHeld(cs, id, fsstore.PurposeChat)}
	}
	start := time.Now()
	sent, received := exchange(t, clients, perAgent)
	took := time.Since(start)
	checkExchange(t, p, agents, perAgent, sent, received)
	t.Logf("%d agents x %d sends over HTTP: %d sent, %d received once each, 0 lost, 0 duplicated, 0 torn, in %v (%.0f sends/s)",
		agents, perAgent, len(sent), len(received), took.Round(time.Millisecond), float64(len(sent))/took.Seconds())
}
