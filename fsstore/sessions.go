package fsstore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Session purposes (DESIGN section 5).
const (
	PurposeTask = "task"
	PurposeChat = "chat"
)

// Session end reasons.
const (
	EndLogout    = "logout"
	EndCompleted = "completed"
	EndReplaced  = "replaced"
	EndExpired   = "expired"
	EndExited    = "process_exited"
)

// Session is sessions/<id>.json (mode 0600). The token is never stored: only
// the SHA-256 of its secret part.
type Session struct {
	ID         string    `json:"id"`
	Agent      string    `json:"agentId"`
	Purpose    string    `json:"purpose"`
	TaskID     string    `json:"taskId,omitempty"`
	TokenHash  string    `json:"tokenHash"`
	PID        int       `json:"pid"`
	CreatedAt  time.Time `json:"createdAt"`
	LastSeenAt time.Time `json:"lastSeenAt"`
	EndedAt    time.Time `json:"endedAt,omitzero"`
	EndReason  string    `json:"endReason,omitempty"`
	// Idle is the inactivity timeout in force when the session was made.
	Idle Duration `json:"idleTimeout"`
	// ReplyTo is the sender of the last message get_pending_messages
	// returned in this session: whom respond_chat answers.
	ReplyTo string `json:"replyTo,omitempty"`
}

// Live says whether the session can still be used at now.
func (s Session) Live(now time.Time) bool {
	return s.EndedAt.IsZero() && now.Before(s.LastSeenAt.Add(s.Idle.Duration))
}

// Trigger is pending/<agent>.<purpose>.json: "start agent for purpose".
type Trigger struct {
	Agent     string    `json:"agentId"`
	Purpose   string    `json:"purpose"`
	Reason    string    `json:"reason"`
	TaskID    string    `json:"taskId,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// WriteTrigger records a pending-purpose trigger (the watcher's job; tests
// and humans may do it too). An existing trigger is kept.
func (s *Store) WriteTrigger(ctx context.Context, t Trigger) error {
	path, err := s.TriggerPath(Pending, t.Agent, t.Purpose)
	if err != nil {
		return err
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = time.Now().UTC()
	}
	_, err = UpdateDoc(ctx, s, path, ModeFile, func(doc *Trigger, exists bool) error {
		if exists {
			return ErrNoChange
		}
		*doc = t
		return nil
	})
	return err
}

// takeTrigger removes and returns agent's trigger for purpose, if any.
func (s *Store) takeTrigger(ctx context.Context, agent, purpose string) (Trigger, bool, error) {
	path, err := s.TriggerPath(Pending, agent, purpose)
	if err != nil {
		return Trigger{}, false, err
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return Trigger{}, false, nil // the common case, without a lock
	}
	unlock, err := s.LockDir(ctx, filepath.Dir(path))
	if err != nil {
		return Trigger{}, false, err
	}
	defer unlock()
	var t Trigger
	if err := s.ReadDoc(path, &t); err != nil {
		if errors.Is(err, ErrNotFound) {
			return Trigger{}, false, nil
		}
		return Trigger{}, false, err
	}
	if err := os.Remove(path); err != nil {
		return Trigger{}, false, fmt.Errorf("consume trigger: %w", err)
	}
	return t, true, nil
}

// ErrNothingToDo says authenticate found no work for the agent.
var ErrNothingToDo = errors.New("nothing to do")

// Authenticate checks the agent's passkey, chooses the session's purpose and
// creates the session (DESIGN section 5). It returns the session and its
// token, which is shown only here.
func (s *Store) Authenticate(ctx context.Context, cfg *Config, agent, passkey, projectID string) (Session, string, error) {
	if err := CheckAgentID(agent); err != nil {
		return Session{}, "", err
	}
	if _, ok := cfg.Agent(agent); !ok {
		return Session{}, "", fmt.Errorf("agent %q is not configured in this project: check the id, or ask a human to run aipm agent add: %w", agent, ErrNotFound)
	}
	if projectID != "" && projectID != cfg.Project.ID {
		return Session{}, "", fmt.Errorf("project_id %q is not this project (%s): you are connected to the wrong project's aipm", Clip(projectID, maxEchoedID), cfg.Project.ID)
	}
	if err := s.checkBackoff(agent, time.Now().UTC()); err != nil {
		return Session{}, "", err
	}
	if err := s.CheckPasskey(agent, passkey); err != nil {
		if errors.Is(err, ErrBadPasskey) {
			if rerr := s.recordAuthFailure(ctx, agent, time.Now().UTC()); rerr != nil {
				return Session{}, "", fmt.Errorf("%w (and the failure could not be counted: %v)", err, rerr)
			}
		}
		return Session{}, "", err
	}
	if err := s.resetAuthFailures(ctx, agent); err != nil {
		return Session{}, "", err
	}
	purpose, taskID, err := s.choosePurpose(ctx, agent)
	if err != nil {
		return Session{}, "", err
	}
	var secret [24]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return Session{}, "", err
	}
	now := time.Now().UTC()
	ses := Session{
		ID: NewID(PrefixSession), Agent: agent, Purpose: purpose, TaskID: taskID,
		PID: os.Getpid(), CreatedAt: now, LastSeenAt: now, Idle: cfg.Defaults.SessionIdleTimeout,
	}
	token := ses.ID + "." + base64.RawURLEncoding.EncodeToString(secret[:])
	ses.TokenHash = hashToken(token)
	unlock, err := s.LockDir(ctx, s.CollectionDir(Sessions))
	if err != nil {
		return Session{}, "", err
	}
	defer unlock()
	// At most one live session per agent and purpose: a new one replaces the
	// old (its process most likely died); the old one's next call is told so.
	// Ended and expired sessions are removed here (their cleanup).
	if err := s.eachSession(func(path string, old Session) error {
		switch {
		case !old.Live(now):
			return os.Remove(path)
		case old.Agent == agent && old.Purpose == purpose:
			old.EndedAt, old.EndReason = now, EndReplaced
			return s.WriteDoc(path, old, ModePrivateFile)
		}
		return nil
	}); err != nil {
		return Session{}, "", err
	}
	path, _ := s.DocPath(Sessions, ses.ID)
	if err := s.WriteDoc(path, ses, ModePrivateFile); err != nil {
		return Session{}, "", err
	}
	return ses, token, nil
}

// choosePurpose: a pending trigger first (consumed), else work found now.
func (s *Store) choosePurpose(ctx context.Context, agent string) (string, string, error) {
	for _, p := range []string{PurposeTask, PurposeChat} {
		t, ok, err := s.takeTrigger(ctx, agent, p)
		if err != nil {
			return "", "", err
		}
		if ok {
			if p == PurposeTask && t.TaskID == "" {
				t.TaskID = s.taskInProgress(agent)
			}
			return p, t.TaskID, nil
		}
	}
	if id := s.taskInProgress(agent); id != "" {
		return PurposeTask, id, nil
	}
	if s.HasChatWork(ctx, agent) {
		return PurposeChat, "", nil
	}
	return "", "", fmt.Errorf("agent %s has no task in progress, no unread messages and no pending trigger: %w", agent, ErrNothingToDo)
}

// taskInProgress returns the agent's oldest in-progress task, or "".
func (s *Store) taskInProgress(agent string) string {
	tasks, _, err := s.Tasks(TaskFilter{Status: StatusInProgress, Assignee: agent})
	if err != nil || len(tasks) == 0 {
		return ""
	}
	return tasks[len(tasks)-1].ID
}

// HasChatWork says whether the agent has something for a chat session:
// unread messages from others.
func (s *Store) HasChatWork(ctx context.Context, agent string) bool {
	res, err := s.ReadUnread(ctx, agent, StreamChat, ReadOptions{Peek: true, Limit: 1, Match: FromOthers(agent)})
	return err == nil && len(res.Records) > 0
}

// FromOthers matches chat lines that someone else sent to agent. A line
// that is JSON but not a message (a hand edit gone wrong) does not match, so
// readers pass over it instead of failing on it; doctor reports it.
func FromOthers(agent string) func(Record) bool {
	return func(r Record) bool {
		var m Message
		if json.Unmarshal(r.Data, &m) != nil || m.ID == "" || m.SenderID == "" {
			return false
		}
		return m.SenderID != agent && m.ReceiverID == ""
	}
}

func (s *Store) eachSession(fn func(path string, ses Session) error) error {
	dir := s.CollectionDir(Sessions)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list sessions: %w", err)
	}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || CheckID(PrefixSession, id) != nil {
			continue
		}
		path := filepath.Join(dir, e.Name())
		var ses Session
		if err := s.ReadDoc(path, &ses); err != nil {
			continue // doctor reports damaged documents
		}
		if err := fn(path, ses); err != nil {
			return err
		}
	}
	return nil
}

// LiveSessions lists the sessions live at now.
func (s *Store) LiveSessions(now time.Time) ([]Session, error) {
	var out []Session
	err := s.eachSession(func(_ string, ses Session) error {
		if ses.Live(now) {
			out = append(out, ses)
		}
		return nil
	})
	return out, err
}

func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Session errors, for callers that explain them.
var (
	ErrBadToken       = errors.New("invalid session token")
	ErrSessionEnded   = errors.New("session ended")
	ErrSessionExpired = errors.New("session expired")
	// ErrExpiryNotSaved comes with a valid session whose sliding expiry
	// could not be written: a caller may go on with the session.
	ErrExpiryNotSaved = errors.New("the session's expiry could not be saved")
)

// touchEvery bounds how often a session's LastSeenAt is rewritten: sliding
// expiry needs minutes of precision, not a disk write per call.
const touchEvery = 30 * time.Second

// CheckSession resolves a token to its live session and slides its expiry.
func (s *Store) CheckSession(ctx context.Context, token string) (Session, error) {
	id, _, ok := strings.Cut(token, ".")
	if !ok || CheckID(PrefixSession, id) != nil {
		return Session{}, fmt.Errorf("session_token is malformed: pass the token authenticate returned: %w", ErrBadToken)
	}
	path, _ := s.DocPath(Sessions, id)
	var ses Session
	if err := s.ReadDoc(path, &ses); err != nil {
		if errors.Is(err, ErrNotFound) {
			return Session{}, fmt.Errorf("no such session (it may have been cleaned up after it ended): call authenticate again: %w", ErrBadToken)
		}
		return Session{}, err
	}
	if subtle.ConstantTimeCompare([]byte(hashToken(token)), []byte(ses.TokenHash)) != 1 {
		return Session{}, fmt.Errorf("session_token does not match its session: pass the token authenticate returned: %w", ErrBadToken)
	}
	now := time.Now().UTC()
	if !ses.EndedAt.IsZero() {
		return ses, fmt.Errorf("this session ended (%s) at %s: %w", ses.EndReason, ses.EndedAt.Format(time.RFC3339), ErrSessionEnded)
	}
	if !ses.Live(now) {
		return ses, fmt.Errorf("this session expired after %s without a call: %w", ses.Idle.Duration, ErrSessionExpired)
	}
	if now.Sub(ses.LastSeenAt) > min(touchEvery, ses.Idle.Duration/10) {
		touched, err := UpdateDoc(ctx, s, path, ModePrivateFile, func(cur *Session, exists bool) error {
			if !exists || !cur.EndedAt.IsZero() {
				return ErrNoChange
			}
			cur.LastSeenAt = now
			return nil
		})
		if err != nil {
			// The session is valid; only its sliding expiry could not be
			// saved (a full disk, say). Read-only calls go on.
			return ses, fmt.Errorf("%w: %w", ErrExpiryNotSaved, err)
		}
		return touched, nil
	}
	return ses, nil
}

// EndSession ends a session with a reason; ending an ended one is a no-op.
func (s *Store) EndSession(ctx context.Context, id, reason string) (Session, error) {
	path, err := s.DocPath(Sessions, id)
	if err != nil {
		return Session{}, err
	}
	return UpdateDoc(ctx, s, path, ModePrivateFile, func(ses *Session, exists bool) error {
		if !exists {
			return fmt.Errorf("session %s: %w", id, ErrNotFound)
		}
		if !ses.EndedAt.IsZero() {
			return ErrNoChange
		}
		ses.EndedAt, ses.EndReason = time.Now().UTC(), reason
		return nil
	})
}

// SetReplyTo records whom respond_chat answers in this session.
func (s *Store) SetReplyTo(ctx context.Context, id, agent string) error {
	path, err := s.DocPath(Sessions, id)
	if err != nil {
		return err
	}
	_, err = UpdateDoc(ctx, s, path, ModePrivateFile, func(ses *Session, exists bool) error {
		if !exists {
			return fmt.Errorf("session %s: %w", id, ErrNotFound)
		}
		if ses.ReplyTo == agent {
			return ErrNoChange
		}
		ses.ReplyTo = agent
		return nil
	})
	return err
}
