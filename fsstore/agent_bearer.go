package fsstore

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"time"

	"aipm/fsstore/internal/storage"
	"aipm/internal/lockedfile"
)

// AgentOfPasskey finds the AI agent of cfg whose passkey is passkey (an
// HTTP bearer token: the credential names no agent), comparing it with each
// agent's stored hash in constant time. A passkey found once is remembered
// in memory, keyed by its hash, while the agent's passkey.json keeps its
// stamp, so that a request costs one stat; a new passkey (aipm agent
// passkey) or a removed agent is seen at once. A passkey of no agent is
// ErrBadPasskey.
//
// A wrong token costs the agents nothing (DESIGN section 14): a passkey is
// 32 random bytes, which no number of guesses finds, so a guess is counted
// for no agent and slows none; its cost falls on its sender (mcpserver
// delays its answer and closes its connection), and nothing is written or
// locked. It costs the server little: a token that cannot be a passkey
// (not of the form aipm agent add prints) is compared with none, and one
// that can is compared with each agent's stored hash, kept in memory while
// its passkey.json keeps its stamp (a stat and a SHA-256 per agent). This
// is apart from authenticate's count of failures per agent (auth.json),
// where a passkey is tried for a named agent.
func (s *Store) AgentOfPasskey(_ context.Context, cfg *storage.Config, passkey string) (string, error) {
	if err := storage.CheckPasskeyArg(passkey); err != nil {
		return "", storage.Kindf(storage.ErrBadPasskey, "%v", err)
	}
	key := sha256.Sum256([]byte(passkey))
	if agent, ok := s.cachedBearer(cfg, key); ok {
		return agent, nil
	}
	if !passkeyShaped(passkey) {
		return "", storage.ErrBadPasskey
	}
	for _, a := range cfg.Agents {
		if a.Type != storage.AgentAI {
			continue
		}
		h, stamp, err := s.bearerHash(a.ID)
		switch {
		case errors.Is(err, storage.ErrBadPasskey):
			continue // no passkey, or a damaged one: no token is it
		case err != nil:
			return "", err
		}
		if h.matches(passkey) {
			s.caches.bearers.put(key, a.ID, stamp)
			return a.ID, nil
		}
	}
	return "", storage.ErrBadPasskey
}

// bearerHash is agent's stored passkey hash and the stamp of its
// passkey.json, read once per version of the file (ErrBadPasskey: it has
// none, or a damaged one).
func (s *Store) bearerHash(agent string) (storedHash, lockedfile.Stamp, error) {
	path, err := s.files.PasskeyPath(agent)
	if err != nil {
		return storedHash{}, lockedfile.Stamp{}, storage.Kindf(storage.ErrBadPasskey, "%v", err)
	}
	seen := time.Now()
	stamp, err := lockedfile.StampPath(path)
	if err != nil {
		return storedHash{}, stamp, s.files.Failed("stat", path, err)
	}
	if stamp == (lockedfile.Stamp{}) {
		return storedHash{}, stamp, storage.ErrBadPasskey
	}
	if h, ok := s.caches.passkeys.Get(agent, stamp); ok {
		return h, stamp, nil
	}
	h, err := s.passkeyHash(agent)
	if err != nil {
		return storedHash{}, stamp, err
	}
	// PutSeen: a removed agent added again writes its passkey.json anew.
	s.caches.passkeys.PutSeen(agent, h, seen, stamp)
	return h, stamp, nil
}

// cachedBearer is the agent whose passkey has the hash key, as found
// before, while that still holds: it is one of cfg's AI agents and its
// passkey.json keeps the stamp it had then. An entry that no longer holds
// is forgotten.
func (s *Store) cachedBearer(cfg *storage.Config, key [32]byte) (string, bool) {
	agent, ok := s.caches.bearers.get(key)
	if !ok {
		return "", false
	}
	if a, configured := cfg.Agent(agent); configured && a.Type == storage.AgentAI && s.bearerStampOK(agent, key) {
		return agent, true
	}
	s.caches.bearers.forget(key)
	return "", false
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
