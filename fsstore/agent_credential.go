package fsstore

import (
	"aipm/fsstore/internal/storage"
	"aipm/internal/lockedfile"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// SaveCredential writes agent's passkey to CredentialPath (0600, directory
// 0700), so that aipm watch can start the agent.
func (s *Store) SaveCredential(agent, passkey string) (string, error) {
	path, err := s.files.CredentialPath(agent)
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
	if err := os.MkdirAll(dir, storage.ModePrivateDir); err != nil {
		return "", fmt.Errorf("save credential: %w", err)
	}
	if err := os.Chmod(dir, storage.ModePrivateDir); err != nil {
		return "", fmt.Errorf("save credential: %w", err)
	}
	if err := storage.WriteFileAtomic(path, []byte(passkey+"\n"), storage.ModePrivateFile, s.files.Durable.Load()); err != nil {
		return "", fmt.Errorf("save credential: %w", err)
	}
	return path, nil
}

// What the passkey saved for aipm watch (credentials/ID.passkey) is
// (SavedPasskeyOf).
const (
	savedNone    = "none"    // nothing saved
	savedCurrent = "current" // the agent's passkey
	SavedStale   = "stale"   // not the agent's passkey, or unreadable
)

// SavedPasskeyOf says whether agent has a passkey saved for aipm watch,
// and whether it is the agent's passkey: a saved passkey that is not (a
// new one issued since by an older aipm, a file edited or copied from
// another clone) makes every start of the agent fail on authenticate.
// The file is read as a client's AIPM_PASSKEY_FILE is (CredentialFromEnv).
func (s *Store) SavedPasskeyOf(agent string) string {
	path, err := s.files.CredentialPath(agent)
	if err != nil {
		return savedNone
	}
	data, err := lockedfile.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return savedNone
	case err != nil:
		return SavedStale
	}
	if s.checkPasskey(agent, strings.TrimRight(string(data), "\r\n")) != nil {
		return SavedStale
	}
	return savedCurrent
}

// ReadPasskeyFile reads a passkey file (AIPM_PASSKEY_FILE).
func ReadPasskeyFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read passkey file: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}

// Credential is an agent's id and passkey, as a process holds them from
// its environment.
type Credential struct {
	Agent   string
	Passkey string
}

// LogValue keeps the passkey out of every log line.
func (c Credential) LogValue() slog.Value { return slog.StringValue(c.Agent + " (passkey redacted)") }

// unreadableKey is the error of an AIPM_PASSKEY_FILE that cannot be read:
// what failed, and how to make the file agent's passkey.
func unreadableKey(agent string, err error) error {
	return fmt.Errorf("AIPM_PASSKEY_FILE: %w: point it at %s's passkey file (aipm agent passkey %s --save issues one and saves it in .ai-pm/credentials)", err, agent, agent)
}

// CredentialFromEnv reads the agent credential that aipm serve holds and
// aipm hook acts for, from the process environment: AIPM_AGENT_ID with AIPM_PASSKEY, or with AIPM_PASSKEY_FILE
// naming a file only its owner can read (0600). None set: no credential.
func CredentialFromEnv(getenv func(string) string) (*Credential, error) {
	agent, key, file := getenv(EnvAgentID), getenv(EnvPasskey), getenv(EnvPasskeyFile)
	switch {
	case agent == "" && key == "" && file == "":
		return nil, nil
	case agent == "":
		return nil, errors.New("AIPM_PASSKEY or AIPM_PASSKEY_FILE is set without AIPM_AGENT_ID: set the agent id too")
	case key != "" && file != "":
		return nil, errors.New("both AIPM_PASSKEY and AIPM_PASSKEY_FILE are set: keep one (AIPM_PASSKEY_FILE is safer)")
	case key == "" && file == "":
		return nil, errors.New("AIPM_AGENT_ID is set without AIPM_PASSKEY_FILE or AIPM_PASSKEY: set one, or unset AIPM_AGENT_ID")
	}
	if err := storage.CheckAgentID(agent); err != nil {
		return nil, fmt.Errorf("AIPM_AGENT_ID: %w", err)
	}
	if file != "" {
		fi, err := os.Stat(file)
		if err != nil {
			return nil, unreadableKey(agent, err)
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("AIPM_PASSKEY_FILE %s has mode %v: others can read it; run chmod 600 %s", file, fi.Mode(), file)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, unreadableKey(agent, err)
		}
		key = strings.TrimRight(string(data), "\r\n") // the file's line end, nothing else
		if key == "" {
			return nil, fmt.Errorf("AIPM_PASSKEY_FILE %s is empty: write the passkey aipm agent add printed into it", file)
		}
	}
	return &Credential{Agent: agent, Passkey: key}, nil
}
