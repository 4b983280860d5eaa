package fsstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Failed authenticates are counted per agent in agents/<agent>/auth.json,
// under the agent directory's lock, so that every aipm serve of the
// project slows the same guesser (DESIGN section 5). The first few
// failures cost nothing; each further one doubles the wait before the next
// attempt is even checked, up to a cap. A success removes the file.

const (
	freeFailures = 3
	backoffBase  = time.Second
	backoffCap   = 5 * time.Minute
)

// authFailures is agents/<agent>/auth.json.
type authFailures struct {
	Failures      int       `json:"failures"`
	LastFailureAt time.Time `json:"lastFailureAt"`
	NotBefore     time.Time `json:"notBefore"`
}

// ErrBackoff says authenticate refused to check a passkey because of
// earlier failures; the error it wraps says until when.
var ErrBackoff = errors.New("too many failed authenticates")

// BackoffError is the refusal of an attempt made too soon.
type BackoffError struct {
	Agent    string
	Failures int
	Until    time.Time
	Now      time.Time
}

func (e *BackoffError) Error() string {
	return fmt.Sprintf("%d failed authenticates for %q in a row: try again after %s (in %s), with the passkey aipm agent add printed",
		e.Failures, e.Agent, e.Until.Format(time.RFC3339), e.Until.Sub(e.Now).Round(time.Second))
}

func (e *BackoffError) Unwrap() error { return ErrBackoff }

// backoffAfter is the wait after the given number of failures in a row.
func backoffAfter(failures int) time.Duration {
	if failures <= freeFailures {
		return 0
	}
	return min(backoffBase<<min(failures-freeFailures-1, 20), backoffCap)
}

func (s *Store) authPath(agent string) (string, error) { return s.agentFile(agent, "auth.json") }

// checkBackoff refuses an attempt made before the agent's back-off ends.
func (s *Store) checkBackoff(agent string, now time.Time) error {
	path, err := s.authPath(agent)
	if err != nil {
		return err
	}
	var f authFailures
	if err := s.readDoc(path, &f); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		return err
	}
	if now.Before(f.NotBefore) {
		return &BackoffError{Agent: agent, Failures: f.Failures, Until: f.NotBefore, Now: now}
	}
	return nil
}

// recordAuthFailure counts one more failure and sets the next wait.
func (s *Store) recordAuthFailure(ctx context.Context, agent string, now time.Time) error {
	path, err := s.authPath(agent)
	if err != nil {
		return err
	}
	_, err = UpdateDoc(ctx, s, path, ModePrivateFile, func(f *authFailures, _ bool) error {
		f.Failures++
		f.LastFailureAt = now
		f.NotBefore = now.Add(backoffAfter(f.Failures))
		return nil
	})
	return err
}

// resetAuthFailures forgets the failures after a success.
func (s *Store) resetAuthFailures(ctx context.Context, agent string) error {
	path, err := s.authPath(agent)
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	unlock, err := s.lockDir(ctx, filepath.Dir(path))
	if err != nil {
		return err
	}
	defer unlock()
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reset failed authenticates: %w", err)
	}
	return nil
}
