package fsstore

import (
	"crypto/sha256"
	"errors"
	"sync"

	"aipm/fsstore/lockedfile"
)

// AgentOfPasskey finds the AI agent of cfg whose passkey is passkey (an
// HTTP bearer token: the credential names no agent), comparing it with each
// agent's stored hash (checkPasskey). A passkey found once is remembered in
// memory, keyed by its hash, while the agent's passkey.json keeps its stamp,
// so that a request costs one stat; a new passkey (aipm agent passkey) or a
// removed agent is seen at once. A passkey of no agent is ErrBadPasskey.
// Not slowed here: the caller backs off per client (BackoffAfter).
func (s *Store) AgentOfPasskey(cfg *Config, passkey string) (string, error) {
	if err := CheckPasskeyArg(passkey); err != nil {
		return "", kindf(ErrBadPasskey, "%v", err)
	}
	key := sha256.Sum256([]byte(passkey))
	if agent, ok := s.caches.bearers.get(key); ok {
		if a, configured := cfg.Agent(agent); configured && a.Type == AgentAI && s.bearerStampOK(agent, key) {
			return agent, nil
		}
		s.caches.bearers.forget(key)
	}
	for _, a := range cfg.Agents {
		if a.Type != AgentAI {
			continue
		}
		path, err := s.PasskeyPath(a.ID)
		if err != nil {
			continue
		}
		before, err := lockedfile.StampPath(path)
		if err != nil || before == (lockedfile.Stamp{}) {
			continue
		}
		err = s.checkPasskey(a.ID, passkey)
		switch {
		case errors.Is(err, ErrBadPasskey):
			continue
		case err != nil:
			return "", err
		}
		s.caches.bearers.put(key, a.ID, before)
		return a.ID, nil
	}
	return "", ErrBadPasskey
}

// bearerStampOK says whether agent's passkey.json still has the stamp it
// had when key was found to be its passkey.
func (s *Store) bearerStampOK(agent string, key [32]byte) bool {
	path, err := s.PasskeyPath(agent)
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
