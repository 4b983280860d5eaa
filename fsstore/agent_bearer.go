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
	"time"

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
	if agent, ok := s.cachedBearer(cfg, key); ok {
		return agent, nil
	}
	if !passkeyShaped(passkey) {
		return "", storage.ErrBadPasskey
	}
	unlock, err := lockedfile.Lock(ctx, s.files.BearerLockPath(), storage.ModePrivateFile)
	if err != nil {
		return "", s.files.Failed("lock", s.files.BearerLockPath(), err)
	}
	defer unlock()
	doc, err := s.loadBearerFailures()
	if err != nil {
		return "", err
	}
	now := s.files.Now().UTC()
	scan, err := s.scanPasskeys(cfg, doc, passkey, now)
	switch {
	case err != nil:
		return "", err
	case scan.agent == "":
		return "", s.countBearerMiss(cfg, doc, scan, now)
	}
	if err := s.forgetBearerFailures(cfg, doc, scan.agent); err != nil {
		return "", err
	}
	s.caches.bearers.put(key, scan.agent, scan.stamp)
	return scan.agent, nil
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

// passkeyScan is what a comparison of a bearer token with the AI agents'
// passkeys found (scanPasskeys).
type passkeyScan struct {
	agent    string           // the agent whose passkey it is ("": none)
	stamp    lockedfile.Stamp // that agent's passkey.json's stamp before the comparison
	compared []string         // the agents it was compared with and is not the passkey of
	// wait, when an agent was passed over because its back-off is not
	// over, is the refusal until the first of those back-offs ends.
	wait *storage.BackoffError
}

// scanPasskeys compares passkey with the passkey of each AI agent of cfg
// that has one, in cfg's order, until one is it; an agent whose back-off
// in doc is not over at now is passed over, not compared with.
func (s *Store) scanPasskeys(cfg *storage.Config, doc bearerFailures, passkey string, now time.Time) (passkeyScan, error) {
	var scan passkeyScan
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
			if scan.wait == nil || f.NotBefore.Before(scan.wait.Until) {
				scan.wait = &storage.BackoffError{Failures: f.Failures, Until: f.NotBefore, Now: now}
			}
			continue
		}
		err = s.checkPasskey(a.ID, passkey)
		switch {
		case errors.Is(err, storage.ErrBadPasskey):
			scan.compared = append(scan.compared, a.ID)
			continue
		case err != nil:
			return scan, err
		}
		scan.agent, scan.stamp = a.ID, before
		return scan, nil
	}
	return scan, nil
}

// loadBearerFailures reads bearer.json (none yet: no failures).
func (s *Store) loadBearerFailures() (bearerFailures, error) {
	var doc bearerFailures
	if err := s.files.ReadDoc(s.files.BearerPath(), &doc); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return bearerFailures{}, err
	}
	return doc, nil
}

// forgetBearerFailures clears the wrong tokens in a row counted for agent,
// whose passkey a token just was.
func (s *Store) forgetBearerFailures(cfg *storage.Config, doc bearerFailures, agent string) error {
	if _, failed := doc.Agents[agent]; !failed {
		return nil
	}
	delete(doc.Agents, agent)
	return s.writeBearerFailures(cfg, doc)
}

// countBearerMiss records a token that was no agent's passkey, as a
// failure at now for every agent the scan compared it with, and returns
// the answer: the scan's wait if an agent was passed over, else
// ErrBadPasskey.
func (s *Store) countBearerMiss(cfg *storage.Config, doc bearerFailures, scan passkeyScan, now time.Time) error {
	if len(scan.compared) > 0 {
		if doc.Agents == nil {
			doc.Agents = map[string]storage.AuthFailures{}
		}
		for _, agent := range scan.compared {
			f := doc.Agents[agent]
			f.Failures++
			f.LastFailureAt = now
			f.NotBefore = now.Add(storage.BackoffAfter(f.Failures))
			doc.Agents[agent] = f
		}
		if err := s.writeBearerFailures(cfg, doc); err != nil {
			return fmt.Errorf("%w (and the failure could not be counted: %v)", storage.ErrBadPasskey, err)
		}
	}
	if scan.wait != nil {
		return scan.wait
	}
	return storage.ErrBadPasskey
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
