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
// cannot start it; a saved passkey must be the agent's (SavedPasskeyOf).
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
		cred, err := s.files.CredentialPath(a.ID)
		if err != nil {
			continue
		}
		switch saved := s.SavedPasskeyOf(a.ID); {
		case saved == SavedStale:
			out = append(out, storage.Problem{Path: s.files.Rel(cred), Reason: fmt.Sprintf(
				"the passkey saved for AI agent %q is not its passkey (a new one was issued since, or the file was edited), so a client started with it (aipm watch, AIPM_PASSKEY_FILE) fails to authenticate: run aipm agent passkey %s --save", a.ID, a.ID)})
		case saved == savedNone && len(a.Command) > 0:
			out = append(out, storage.Problem{Path: s.files.Rel(cred), Reason: fmt.Sprintf(
				"AI agent %q has a command but no saved passkey, so aipm watch cannot start it and its work waits: run aipm agent passkey %s --save", a.ID, a.ID)})
		}
	}
	return out
}
