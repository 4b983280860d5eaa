package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"errors"
	"testing"
)

// An entry that would make the config invalid is refused without a line
// number: the line would be in text that was never written.
func TestAddAgentInvalidEntry(t *testing.T) {
	s := newTestStore(t)
	_, err := s.AddAgent(context.Background(), NewAgent{ID: "bot", Type: storage.AgentAI, Parent: "nobody"})
	if !errors.Is(err, storage.ErrInvalid) || err.Error() != `agent "bot" cannot be added: agent "bot": parent "nobody" is not a configured agent: add it or fix the id` {
		t.Errorf("AddAgent with an unknown parent: %v", err)
	}
	if cfg, err := s.files.LoadConfig(); err != nil || len(cfg.Agents) != 0 {
		t.Errorf("config after the refusal: %+v, %v", cfg, err)
	}
}
