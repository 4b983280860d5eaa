package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

type agentSessionIndex struct {
	Sessions []string `json:"sessions"`
}

func (s *Store) sessionIndexPath(agent string) (string, error) {
	if err := storage.CheckAgentID(agent); err != nil {
		return "", err
	}
	return filepath.Join(s.files.CollectionDir(storage.Sessions), storage.SessionIndexDir, agent+".json"), nil
}

// ensureSessionIndex rebuilds sessions/by-agent/ from the session documents
// when it is missing. The caller holds the sessions lock.
func (s *Store) ensureSessionIndex() error {
	dir := filepath.Join(s.files.CollectionDir(storage.Sessions), storage.SessionIndexDir)
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("session index: %w", err)
	}
	byAgent := map[string][]string{}
	if err := storage.EachDoc(s.files, storage.Sessions, func(_ string, ses Session) error {
		if storage.CheckAgentID(ses.Agent) == nil {
			byAgent[ses.Agent] = append(byAgent[ses.Agent], ses.ID)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := s.files.MkdirAll(s.files.CollectionDir(storage.Sessions)); err != nil {
		return fmt.Errorf("session index: %w", err)
	}
	// Built beside, renamed into place: a crash leaves no half index.
	tmp, err := os.MkdirTemp(s.files.CollectionDir(storage.Sessions), "."+storage.SessionIndexDir+".tmp-*")
	if err != nil {
		return fmt.Errorf("session index: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, storage.ModePrivateDir); err != nil {
		return fmt.Errorf("session index: %w", err)
	}
	for agent, ids := range byAgent {
		slices.Sort(ids)
		if err := s.files.WriteDoc(filepath.Join(tmp, agent+".json"), agentSessionIndex{Sessions: ids}, storage.ModePrivateFile); err != nil {
			return fmt.Errorf("session index: %w", err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("session index: %w", err)
	}
	if s.files.Durable.Load() {
		return storage.SyncDir(s.files.CollectionDir(storage.Sessions))
	}
	return nil
}

// setAgentSessionIDs replaces agent's index (the caller holds the sessions
// lock); an agent without sessions has no file.
func (s *Store) setAgentSessionIDs(agent string, ids []string) error {
	path, err := s.sessionIndexPath(agent)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("session index: %w", err)
		}
		return nil
	}
	return s.files.WriteDoc(path, agentSessionIndex{Sessions: ids}, storage.ModePrivateFile)
}

// dropIndexedSessions removes ids from their agents' index files (the
// caller holds the sessions lock and has removed their documents).
func (s *Store) dropIndexedSessions(gone map[string][]string) error {
	for agent, ids := range gone {
		cur, err := s.agentSessionIDs(agent)
		if err != nil {
			return err
		}
		keep := slices.DeleteFunc(cur, func(id string) bool { return slices.Contains(ids, id) })
		if err := s.setAgentSessionIDs(agent, keep); err != nil {
			return err
		}
	}
	return nil
}

// sessionVerdict is what a sweep does with one session document at now.
func sessionVerdict(ses Session, now time.Time) (remove bool, endReason string) {
	switch {
	case !ses.EndedAt.IsZero():
		return true, "" // its end was handled when it ended
	case !ses.live(now):
		return true, EndExpired
	case !processAlive(ses.PID, ses.PIDStart):
		return true, EndExited
	}
	return false, ""
}

// lockSessions takes the sessions lock for a change to session documents,
// with the index built first if it is missing, so that the change can keep
// it.
func (s *Store) lockSessions(ctx context.Context) (unlock func(), err error) {
	unlock, err = s.files.LockDir(ctx, s.files.CollectionDir(storage.Sessions))
	if err != nil {
		return nil, err
	}
	if err := s.ensureSessionIndex(); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

// withAgentSessionIDs calls fn with the ids of agent's sessions, under the
// sessions lock (lockSessions).
func (s *Store) withAgentSessionIDs(ctx context.Context, agent string, fn func(ids []string) error) error {
	unlock, err := s.lockSessions(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	ids, err := s.agentSessionIDs(agent)
	if err != nil {
		return err
	}
	return fn(ids)
}

// sessionIndexProblems finds session documents missing from their agent's
// index (written by something that does not keep it: authenticate would
// not see them); repair adds them.
func (s *Store) sessionIndexProblems(ctx context.Context, repair bool) ([]storage.Problem, error) {
	if _, err := os.Stat(filepath.Join(s.files.CollectionDir(storage.Sessions), storage.SessionIndexDir)); err != nil {
		return nil, nil // none yet: the next authenticate builds it from the documents
	}
	unlock, err := s.files.LockDir(ctx, s.files.CollectionDir(storage.Sessions))
	if err != nil {
		return nil, err
	}
	defer unlock()
	indexed := map[string][]string{}
	var problems []storage.Problem
	err = storage.EachDoc(s.files, storage.Sessions, func(path string, ses Session) error {
		if storage.CheckAgentID(ses.Agent) != nil {
			return nil // doctor's schema check reports it
		}
		ids, ok := indexed[ses.Agent]
		if !ok {
			var err error
			if ids, err = s.agentSessionIDs(ses.Agent); err != nil {
				return err
			}
			indexed[ses.Agent] = ids
		}
		if slices.Contains(ids, ses.ID) {
			return nil
		}
		ixPath, _ := s.sessionIndexPath(ses.Agent)
		p := storage.Problem{Path: s.files.Rel(path), Reason: fmt.Sprintf("missing from %s, so authenticate does not see it", s.files.Rel(ixPath)), Repairable: true}
		if repair {
			ids = append(ids, ses.ID)
			indexed[ses.Agent] = ids
			p.Repaired = s.setAgentSessionIDs(ses.Agent, ids) == nil
		}
		problems = append(problems, p)
		return nil
	})
	return problems, err
}
