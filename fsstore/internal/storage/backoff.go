package storage

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
	// FreeFailures is how many failures in a row cost nothing (BackoffAfter).
	FreeFailures = 3
	backoffBase  = time.Second
	backoffCap   = 5 * time.Minute
)

// authFailures is agents/<agent>/auth.json.
type authFailures struct {
	Failures      int       `json:"failures"`
	LastFailureAt time.Time `json:"lastFailureAt"`
	NotBefore     time.Time `json:"notBefore"`
}

// backoffError is the refusal of an attempt made too soon.
type backoffError struct {
	Agent    string
	Failures int
	Until    time.Time
	Now      time.Time
}

func (e *backoffError) Error() string {
	return fmt.Sprintf("%d failed authenticates for %q in a row: try again after %s (in %s), with the passkey aipm agent add printed",
		e.Failures, e.Agent, e.Until.Format(time.RFC3339), e.Until.Sub(e.Now).Round(time.Second))
}

func (e *backoffError) Unwrap() error { return ErrBackoff }

// BackoffAfter is the wait after the given number of failed attempts in a
// row: nothing for the first few, then doubling up to a cap. It is the one
// schedule of every credential check (authenticate here; wrong HTTP
// bearer tokens per client address in mcpserver).
func BackoffAfter(failures int) time.Duration {
	if failures <= FreeFailures {
		return 0
	}
	return min(backoffBase<<min(failures-FreeFailures-1, 20), backoffCap)
}

func (s *Files) authPath(agent string) (string, error) { return s.agentFile(agent, "auth.json") }

// GuardCredential runs check (the passkey's comparison) slowed per agent
// across processes: under the agent directory's lock it refuses an attempt
// made before the back-off ends, runs check, and counts a failure
// (ErrBadPasskey) or forgets the failures after a success. One lock for
// the three, so that guessers at once are as slow as one guesser in turn.
func (s *Files) GuardCredential(ctx context.Context, agent string, check func() error) error {
	path, err := s.authPath(agent)
	if err != nil {
		return err
	}
	unlock, err := s.LockDir(ctx, filepath.Dir(path))
	if err != nil {
		return err
	}
	defer unlock()
	now := s.seams.now().UTC()
	var f authFailures
	exists := true
	if err := s.ReadDoc(path, &f); err != nil {
		if !errors.Is(err, ErrNotFound) {
			return err
		}
		exists = false
	}
	if now.Before(f.NotBefore) {
		return &backoffError{Agent: agent, Failures: f.Failures, Until: f.NotBefore, Now: now}
	}
	err = check()
	switch {
	case err == nil && exists:
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			return fmt.Errorf("reset failed authenticates: %w", rerr)
		}
	case errors.Is(err, ErrBadPasskey):
		f.Failures++
		f.LastFailureAt = now
		f.NotBefore = now.Add(BackoffAfter(f.Failures))
		if rerr := s.WriteDoc(path, f, ModePrivateFile); rerr != nil {
			return fmt.Errorf("%w (and the failure could not be counted: %v)", err, rerr)
		}
	}
	return err
}
