package fsstore

import (
	"aipm/fsstore/lockedfile"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SaveCredential writes agent's passkey to CredentialPath (0600, directory
// 0700), so that aipm watch can start the agent.
func (s *Store) SaveCredential(agent, passkey string) (string, error) {
	path, err := s.CredentialPath(agent)
	if err != nil {
		return "", err
	}
	if err := s.checkPasskey(agent, passkey); err != nil {
		return "", err
	}
	dir := filepath.Dir(path)
	if err := lockedfile.CheckDir(dir); err != nil {
		return "", fmt.Errorf("save credential: %w", err)
	}
	if err := os.MkdirAll(dir, ModePrivateDir); err != nil {
		return "", fmt.Errorf("save credential: %w", err)
	}
	if err := os.Chmod(dir, ModePrivateDir); err != nil {
		return "", fmt.Errorf("save credential: %w", err)
	}
	if err := writeFileAtomic(path, []byte(passkey+"\n"), ModePrivateFile, s.durable.Load()); err != nil {
		return "", fmt.Errorf("save credential: %w", err)
	}
	return path, nil
}

// ReadPasskeyFile reads a passkey file (AIPM_PASSKEY_FILE).
func ReadPasskeyFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read passkey file: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}
