package fsstore

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"aipm/fsstore/internal/storage"
	"aipm/internal/lockedfile"
)

// AgentOfPasskey finds the AI agent of cfg whose passkey is passkey (an
// HTTP bearer token: the credential names no agent), comparing it with each
// agent's stored hash (checkPasskey). A passkey found once is remembered in
// memory, keyed by its hash, while the agent's passkey.json keeps its stamp,
// so that a request costs one stat; a new passkey (aipm agent passkey) or a
// removed agent is seen at once. A passkey of no agent is ErrBadPasskey.
//
// The comparisons are slowed per agent across processes and client
// addresses (DESIGN section 14), on BackoffAfter's schedule: a token that
// is no agent's passkey is a failed attempt for every agent it was compared
// with, counted in bearer.json under bearer.lock, and an agent whose wait
// is not over is not compared with at all. A token that cannot be a
// passkey (not of the form aipm agent add prints) is compared with none
// and counted for none. When the token matched no agent it was compared
// with and some agent was passed over, the answer is a *BackoffError (Agent
// "") until the first of those waits ends: the token may be that agent's.
// The count is apart from authenticate's (auth.json), so that strangers'
// tokens never refuse a local agent's authenticate.
func (s *Store) AgentOfPasskey(ctx context.Context, cfg *storage.Config, passkey string) (string, error) {
	if err := storage.CheckPasskeyArg(passkey); err != nil {
		return "", storage.Kindf(storage.ErrBadPasskey, "%v", err)
	}
	key := sha256.Sum256([]byte(passkey))
	if agent, ok := s.caches.bearers.get(key); ok {
		if a, configured := cfg.Agent(agent); configured && a.Type == storage.AgentAI && s.bearerStampOK(agent, key) {
			return agent, nil
		}
		s.caches.bearers.forget(key)
	}
	if !passkeyShaped(passkey) {
		return "", storage.ErrBadPasskey
	}
	unlock, err := lockedfile.Lock(ctx, s.files.BearerLockPath(), storage.ModePrivateFile)
	if err != nil {
		return "", fmt.Errorf("lock %s: %w", s.files.Rel(s.files.BearerLockPath()), err)
	}
	defer unlock()
	var doc bearerFailures
	if err := s.files.ReadDoc(s.files.BearerPath(), &doc); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return "", err
	}
	now := s.files.Now().UTC()
	var compared []string
	var wait *storage.BackoffError
	for _, a := range cfg.Agents {
		if a.Type != storage.AgentAI {
			continue
		}
		path, err := s.files.PasskeyPath(a.ID)
		if err != nil {
			continue
		}
		before, err := lockedfile.StampPath(path)
		if err != nil || before == (lockedfile.Stamp{}) {
			continue
		}
		if f := doc.Agents[a.ID]; now.Before(f.NotBefore) {
			if wait == nil || f.NotBefore.Before(wait.Until) {
				wait = &storage.BackoffError{Failures: f.Failures, Until: f.NotBefore, Now: now}
			}
			continue
		}
		err = s.checkPasskey(a.ID, passkey)
		switch {
		case errors.Is(err, storage.ErrBadPasskey):
			compared = append(compared, a.ID)
			continue
		case err != nil:
			return "", err
		}
		if _, failed := doc.Agents[a.ID]; failed {
			delete(doc.Agents, a.ID)
			if err := s.writeBearerFailures(cfg, doc); err != nil {
				return "", err
			}
		}
		s.caches.bearers.put(key, a.ID, before)
		return a.ID, nil
	}
	if len(compared) > 0 {
		if doc.Agents == nil {
			doc.Agents = map[string]storage.AuthFailures{}
		}
		for _, agent := range compared {
			f := doc.Agents[agent]
			f.Failures++
			f.LastFailureAt = now
			f.NotBefore = now.Add(storage.BackoffAfter(f.Failures))
			doc.Agents[agent] = f
		}
		if err := s.writeBearerFailures(cfg, doc); err != nil {
			return "", fmt.Errorf("%w (and the failure could not be counted: %v)", storage.ErrBadPasskey, err)
		}
	}
	if wait != nil {
		return "", wait
	}
	return "", storage.ErrBadPasskey
}

// bearerFailures is bearer.json: per AI agent, the bearer tokens in a row
// that were compared with its passkey and were not it.
type bearerFailures struct {
	Agents map[string]storage.AuthFailures `json:"agents"`
}

// writeBearerFailures writes doc, less the agents cfg no longer has; with
// no failure left the file goes.
func (s *Store) writeBearerFailures(cfg *storage.Config, doc bearerFailures) error {
	for agent := range doc.Agents {
		if _, ok := cfg.Agent(agent); !ok {
			delete(doc.Agents, agent)
		}
	}
	if len(doc.Agents) == 0 {
		if err := os.Remove(s.files.BearerPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("reset wrong bearer tokens: %w", err)
		}
		return nil
	}
	return s.files.WriteDoc(s.files.BearerPath(), doc, storage.ModePrivateFile)
}

// passkeyShaped says whether passkey has the form of the passkeys
// newPasskey issues: the prefix, then 32 bytes in unpadded base64url.
func passkeyShaped(passkey string) bool {
	rest, ok := strings.CutPrefix(passkey, passkeyPrefix)
	if !ok || len(rest) != base64.RawURLEncoding.EncodedLen(32) {
		return false
	}
	_, err := base64.RawURLEncoding.Strict().DecodeString(rest)
	return err == nil
}

// bearerStampOK says whether agent's passkey.json still has the stamp it
// had when key was found to be its passkey.
func (s *Store) bearerStampOK(agent string, key [32]byte) bool {
	path, err := s.files.PasskeyPath(agent)
	if err != nil {
		return false
	}
	now, err := lockedfile.StampPath(path)
	return err == nil && now != (lockedfile.Stamp{}) && s.caches.bearers.stamp(key) == now
}

// bearerCache remembers passkeys found, by their SHA-256.
type bearerCache struct {
	mu sync.Mutex
	m  map[[32]byte]bearerEntry
}

type bearerEntry struct {
	agent string
	stamp lockedfile.Stamp
}

const bearerCacheMax = 1024 // entries; past it the cache starts over

func (c *bearerCache) get(key [32]byte) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	return e.agent, ok
}

func (c *bearerCache) stamp(key [32]byte) lockedfile.Stamp {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[key].stamp
}

func (c *bearerCache) put(key [32]byte, agent string, st lockedfile.Stamp) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= bearerCacheMax {
		c.m = map[[32]byte]bearerEntry{}
	}
	c.m[key] = bearerEntry{agent: agent, stamp: st}
}

func (c *bearerCache) forget(key [32]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}
