package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// TriggerQueue is pending/: the pending-purpose triggers, "start <agent>
// for <purpose>", that authenticate takes and the watcher acts on.
type TriggerQueue struct{ s *Store }

// Triggers is the project's queue of pending-purpose triggers.
func (s *Store) Triggers() TriggerQueue { return TriggerQueue{s: s} }

// Trigger is pending/<agent>.<purpose>.json: "start agent for purpose".
type Trigger struct {
	Agent     string    `json:"agentId"`
	Purpose   string    `json:"purpose"`
	Reason    string    `json:"reason"`
	TaskID    string    `json:"taskId,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// Write records a pending-purpose trigger (the watcher's job; tests
// and humans may do it too). An existing trigger is kept.
func (tq TriggerQueue) Write(ctx context.Context, t Trigger) error {
	_, err := tq.Add(ctx, t)
	return err
}

// Add is Write, saying whether it wrote (false: a trigger of that agent
// and purpose was already pending, or the agent has a live session of that
// purpose).
func (tq TriggerQueue) Add(ctx context.Context, t Trigger) (bool, error) {
	s := tq.s
	path, err := s.files.TriggerPath(storage.Pending, t.Agent, t.Purpose)
	if err != nil {
		return false, err
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = time.Now().UTC()
	}
	wrote := false
	_, err = storage.UpdateDoc(ctx, s.files, path, storage.ModeFile, func(doc *Trigger, exists bool) error {
		// Under the pending lock, which Authenticate's take of a trigger
		// waits for after it wrote its session: a live session of that
		// agent and purpose needs no trigger.
		if exists || s.hasLiveSession(t.Agent, t.Purpose) {
			return storage.ErrNoChange
		}
		*doc, wrote = t, true
		return nil
	})
	return wrote, err
}

// Pending lists pending/<agent>.<purpose>.json, oldest first.
// Unreadable documents are skipped (doctor reports them).
func (tq TriggerQueue) Pending() ([]Trigger, error) {
	s := tq.s
	var out []Trigger
	err := storage.EachDoc(s.files, storage.Pending, func(_ string, t Trigger) error { out = append(out, t); return nil })
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, err
}

// peekTrigger returns agent's trigger for purpose, if any, leaving it.
func (s *Store) peekTrigger(agent, purpose string) (Trigger, bool, error) {
	path, err := s.files.TriggerPath(storage.Pending, agent, purpose)
	if err != nil {
		return Trigger{}, false, err
	}
	var t Trigger
	if err := s.files.ReadDoc(path, &t); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return Trigger{}, false, nil
		}
		return Trigger{}, false, err
	}
	return t, true, nil
}

// takeTrigger removes and returns agent's trigger for purpose, if any.
func (s *Store) takeTrigger(ctx context.Context, agent, purpose string) (Trigger, bool, error) {
	path, err := s.files.TriggerPath(storage.Pending, agent, purpose)
	if err != nil {
		return Trigger{}, false, err
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return Trigger{}, false, nil // the common case, without a lock
	}
	unlock, err := s.files.LockDir(ctx, filepath.Dir(path))
	if err != nil {
		return Trigger{}, false, err
	}
	defer unlock()
	var t Trigger
	if err := s.files.ReadDoc(path, &t); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return Trigger{}, false, nil
		}
		return Trigger{}, false, err
	}
	if err := os.Remove(path); err != nil {
		return Trigger{}, false, fmt.Errorf("consume trigger: %w", err)
	}
	return t, true, nil
}

// Expire removes agent's trigger for purpose if it is older than
// ttl at now, under the pending lock, and reports whether it did.
func (tq TriggerQueue) Expire(ctx context.Context, agent, purpose string, ttl time.Duration, now time.Time) (Trigger, bool, error) {
	s := tq.s
	path, err := s.files.TriggerPath(storage.Pending, agent, purpose)
	if err != nil {
		return Trigger{}, false, err
	}
	unlock, err := s.files.LockDir(ctx, filepath.Dir(path))
	if err != nil {
		return Trigger{}, false, err
	}
	defer unlock()
	var t Trigger
	if err := s.files.ReadDoc(path, &t); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return Trigger{}, false, nil
		}
		return Trigger{}, false, err
	}
	if now.Sub(t.CreatedAt) < ttl {
		return t, false, nil
	}
	if err := os.Remove(path); err != nil {
		return Trigger{}, false, fmt.Errorf("expire trigger: %w", err)
	}
	return t, true, nil
}

// Untaken says whether agent's trigger for purpose, written before
// since, still waits: a process started for it exited without taking it.
func (tq TriggerQueue) Untaken(agent, purpose string, since time.Time) bool {
	s := tq.s
	path, err := s.files.TriggerPath(storage.Pending, agent, purpose)
	if err != nil {
		return false
	}
	var t Trigger
	return s.files.ReadDoc(path, &t) == nil && t.CreatedAt.Before(since)
}

// hasLiveSession says whether agent has a live session (one a sweep would
// keep) of purpose, or of any purpose when purpose is ""; it reads the
// agent's session index and documents, without a lock.
func (s *Store) hasLiveSession(agent, purpose string) bool {
	ids, err := s.agentSessionIDs(agent)
	if err != nil {
		return false
	}
	now := time.Now()
	for _, id := range ids {
		ses, err := s.session(id)
		if err != nil || ses.Agent != agent || purpose != "" && ses.Purpose != purpose {
			continue
		}
		if over, _ := sessionVerdict(ses, now); !over {
			return true
		}
	}
	return false
}
