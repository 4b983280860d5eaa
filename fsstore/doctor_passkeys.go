package fsstore

import (
	"aipm/fsstore/internal/storage"
	"errors"
	"fmt"
	"os"
)

// passkeyProblems reports every AI agent of cfg without a passkey hash: a
// clone of the project (passkey.json is kept out of git), or an agent added
// to config.toml by hand. Such an agent cannot authenticate; only a person
// can fix it, because the new passkey must be handed to the agent. An agent
// with a command also needs its passkey saved (Startable), or aipm watch
// cannot start it.
func (s *Store) passkeyProblems(cfg *storage.Config) []storage.Problem {
	var out []storage.Problem
	for _, a := range cfg.Agents {
		if a.Type != storage.AgentAI {
			continue
		}
		path, err := s.files.PasskeyPath(a.ID)
		if err != nil {
			continue // the config check reports a bad id
		}
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			out = append(out, storage.Problem{Path: s.files.Rel(path), Reason: fmt.Sprintf(
				"AI agent %q has no passkey and cannot authenticate (passkeys are not kept in git): run aipm agent passkey %s", a.ID, a.ID)})
			continue
		}
		if len(a.Command) == 0 {
			continue
		}
		if cred, err := s.files.CredentialPath(a.ID); err == nil {
			if _, err := os.Stat(cred); errors.Is(err, os.ErrNotExist) {
				out = append(out, storage.Problem{Path: s.files.Rel(cred), Reason: fmt.Sprintf(
					"AI agent %q has a command but no saved passkey, so aipm watch cannot start it and its work waits: run aipm agent passkey %s --save", a.ID, a.ID)})
			}
		}
	}
	return out
}
