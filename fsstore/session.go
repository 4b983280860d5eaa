package fsstore

import (
	"aipm/fsstore/internal/storage"
	"aipm/internal/lockedfile"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// Session end reasons.
const (
	EndLogout    = "logout"
	EndCompleted = "completed"
	endReplaced  = "replaced"
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
	PIDStart   string    `json:"pidStart,omitempty"` // the boot and start of PID's process (processStart): not a later one given its pid
	CreatedAt  time.Time `json:"createdAt"`
	LastSeenAt time.Time `json:"lastSeenAt"`
	EndedAt    time.Time `json:"endedAt,omitzero"`
	EndReason  string    `json:"endReason,omitempty"`
	// Idle is the inactivity timeout in force when the session was made.
	Idle storage.Duration `json:"idleTimeout"`
	// ReplyTo is the sender of the last message get_pending_messages
	// returned in this session: whom respond_chat answers.
	ReplyTo string `json:"replyTo,omitempty"`
	// RunID is the watcher's run (runs/<agent>.<purpose>.json) whose process
	// opened the session, from AIPM_RUN_ID; when that process exits, the
	// watcher ends the session.
	RunID string `json:"runId,omitempty"`
	// SSHClient is the address (host:port) of the ssh client whose
	// connection started the process that opened the session, from sshd's
	// SSH_CONNECTION: set, the session is remote (`ssh home aipm serve`).
	SSHClient string `json:"sshClient,omitempty"`
	// Surfaced is what the session's model has been told of
	// (Store.Surface): not in the session's document but in its told file,
	// filled by Store.Session and LiveSessionsOf.
	Surfaced Surfaced `json:"-"`
}

// live says whether the session can still be used at now.
func (s Session) live(now time.Time) bool {
	return s.EndedAt.IsZero() && now.Before(s.LastSeenAt.Add(s.Idle.Duration))
}

// testHookAuthChosen, in tests, runs when authenticate has chosen the
// purpose and has not written the session yet: where a watcher pass races.
var testHookAuthChosen func(agent, purpose string)

// Authenticate checks the agent's passkey, chooses the session's purpose and
// creates the session (DESIGN section 5). requested, when not empty, is the
// purpose the caller (or the process that started it) asks for. It returns
// the session and its token, which is shown only here.
func (s *Store) Authenticate(ctx context.Context, cfg *storage.Config, agent, passkey, projectID, requested string) (Session, string, error) {
	if err := checkAuthRequest(cfg, agent, projectID, requested); err != nil {
		return Session{}, "", err
	}
	if err := s.checkCredential(ctx, agent, passkey); err != nil {
		return Session{}, "", err
	}
	now := time.Now().UTC()
	live, err := s.sweepSessions(ctx, agent, now)
	if err != nil {
		return Session{}, "", err
	}
	purpose, taskID, err := s.choosePurpose(ctx, cfg, agent, requested, live)
	if err != nil {
		return Session{}, "", err
	}
	if testHookAuthChosen != nil {
		testHookAuthChosen(agent, purpose)
	}
	var secret [24]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return Session{}, "", err
	}
	ses := Session{
		ID: storage.NewID(storage.PrefixSession), Agent: agent, Purpose: purpose, TaskID: taskID,
		PID: os.Getpid(), PIDStart: ownStart(), CreatedAt: now, LastSeenAt: now, Idle: cfg.Defaults.SessionIdleTimeout,
	}
	if !s.files.ServesMany.Load() {
		ses.RunID, ses.SSHClient = os.Getenv(EnvRunID), sshClient(os.Getenv(envSSHConnection))
	}
	token := ses.ID + "." + base64.RawURLEncoding.EncodeToString(secret[:])
	ses.TokenHash = hashToken(token)
	// At most one live session per agent and purpose: a requested purpose
	// replaces the live one (its process most likely died); the old one's
	// next call is told so. Only the agent's own sessions are read, through
	// the session index.
	var replaced []Session
	err = s.withAgentSessionIDs(ctx, agent, func(ids []string) error {
		for _, id := range ids {
			path, err := s.files.DocPath(storage.Sessions, id)
			if err != nil {
				continue
			}
			var old Session
			if s.files.ReadDoc(path, &old) != nil {
				continue // gone, or damaged: doctor reports it
			}
			if old.Agent == agent && old.Purpose == purpose && old.EndedAt.IsZero() {
				ended, err := s.endSession(path, old, endReplaced, now, false)
				if err != nil {
					return err
				}
				replaced = append(replaced, ended)
			}
		}
		// The index names the document before it exists (its invariant).
		if err := s.setAgentSessionIDs(agent, append(ids, ses.ID)); err != nil {
			return err
		}
		path, _ := s.files.DocPath(storage.Sessions, ses.ID)
		return s.files.WriteDoc(path, ses, storage.ModePrivateFile)
	})
	if err != nil {
		return Session{}, "", err
	}
	s.sessionsEnded(ctx, replaced) // a replaced session hands its conversations on: nothing to fail
	// The trigger is taken only now that the session exists: a watcher
	// that looks in between sees the trigger or the session, never
	// neither (it writes no trigger for a live session: TriggerQueue.Add).
	if _, _, err := s.takeTrigger(ctx, agent, purpose); err != nil {
		return Session{}, "", fmt.Errorf("session %s was created, but its trigger could not be taken: %w", ses.ID, err)
	}
	return ses, token, nil
}

// checkAuthRequest checks what authenticate is asked before any file is
// read: an AI agent of this project, this project, a purpose.
func checkAuthRequest(cfg *storage.Config, agent, projectID, requested string) error {
	if err := storage.CheckAgentID(agent); err != nil {
		return err
	}
	a, ok := cfg.Agent(agent)
	if !ok {
		return storage.Kindf(storage.ErrNotFound, "agent %q is not configured in this project: check the id, or ask a human to run aipm agent add", agent)
	}
	if a.Type != storage.AgentAI {
		return storage.Kindf(storage.ErrBadPasskey, "agent %q is a human: humans have no passkey and act through the aipm CLI, not MCP sessions", agent)
	}
	if projectID != "" && projectID != cfg.Project.ID {
		return fmt.Errorf("project_id %q is not this project (%s): you are connected to the wrong project's aipm", storage.Clip(projectID, storage.MaxEchoedID), cfg.Project.ID)
	}
	if requested != "" {
		return storage.CheckPurpose(requested)
	}
	return nil
}

// checkCredential checks agent's passkey, slowed per agent across
// processes (guardCredential): a failure is counted, a success resets the
// count.
func (s *Store) checkCredential(ctx context.Context, agent, passkey string) error {
	return s.files.GuardCredential(ctx, agent, func() error { return s.checkPasskey(agent, passkey) })
}

// sweepSessions ends the sessions that are over without anyone having
// said so (expired, or their aipm serve process is gone) and removes the
// documents of sessions that ended before now. With agent "" it reads
// every session document (the watcher's periodic pass); otherwise only
// that agent's, through the session index (authenticate), and returns the
// agent's live sessions.
func (s *Store) sweepSessions(ctx context.Context, agent string, now time.Time) ([]Session, error) {
	if _, err := os.Stat(s.files.CollectionDir(storage.Sessions)); errors.Is(err, os.ErrNotExist) {
		return nil, nil // no session yet: nothing to create on the way
	}
	sw := &sweep{now: now, gone: map[string][]string{}}
	err := func() error {
		unlock, err := s.lockSessions(ctx)
		if err != nil {
			return err
		}
		defer unlock()
		if agent == "" {
			err = storage.EachDoc(s.files, storage.Sessions, func(path string, ses Session) error { return s.sweepOne(sw, path, ses) })
		} else {
			err = s.sweepAgent(sw, agent)
		}
		if err != nil {
			return err
		}
		return s.dropIndexedSessions(sw.gone)
	}()
	// Best effort: a conversation the hook fails to end still ends at its
	// own timeout.
	s.sessionsEnded(ctx, sw.over)
	return sw.live, err
}

// sweep is what one sweep of session documents found.
type sweep struct {
	now  time.Time
	live []Session           // sessions still live
	over []Session           // sessions it ended (their end hook is due)
	gone map[string][]string // agent -> ids whose documents are gone
}

// sweepAgent sweeps the sessions agent's index names; ids whose documents
// are missing (or that are not session ids) leave the index too.
func (s *Store) sweepAgent(sw *sweep, agent string) error {
	ids, err := s.agentSessionIDs(agent)
	if err != nil {
		return err
	}
	for _, id := range ids {
		path, err := s.files.DocPath(storage.Sessions, id)
		if err != nil {
			sw.gone[agent] = append(sw.gone[agent], id) // the index was damaged
			continue
		}
		var ses Session
		if err := s.files.ReadDoc(path, &ses); err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				sw.gone[agent] = append(sw.gone[agent], id)
			}
			continue // damaged: doctor reports it
		}
		if err := s.sweepOne(sw, path, ses); err != nil {
			return err
		}
	}
	return nil
}

// sweepOne applies sessionVerdict to one session document.
func (s *Store) sweepOne(sw *sweep, path string, ses Session) error {
	remove, reason := sessionVerdict(ses, sw.now)
	if !remove {
		sw.live = append(sw.live, ses)
		return nil
	}
	ended, err := s.endSession(path, ses, reason, sw.now, true)
	if err != nil {
		return err
	}
	if storage.CheckAgentID(ended.Agent) == nil {
		sw.gone[ended.Agent] = append(sw.gone[ended.Agent], ended.ID)
	}
	if reason != "" { // not ended before: its end hook is due
		sw.over = append(sw.over, ended)
	}
	return nil
}

// requestedPurpose is choosePurpose for a purpose asked for: its trigger,
// if any, names the task (Authenticate takes it once the session exists);
// a task session needs a task.
func (s *Store) requestedPurpose(ctx context.Context, agent, requested string) (string, string, error) {
	t, _, err := s.peekTrigger(agent, requested)
	if err != nil {
		return "", "", err
	}
	if requested == storage.PurposeChat {
		return storage.PurposeChat, "", nil
	}
	if t.TaskID == "" {
		t.TaskID = s.taskInProgress(agent)
	}
	if t.TaskID == "" {
		return "", "", fmt.Errorf("a task session was requested, but agent %s has no task in progress: %w", agent, ErrNothingToDo)
	}
	return storage.PurposeTask, t.TaskID, nil
}

// choosePurpose picks the session's purpose (DESIGN section 5): the
// requested one; else a pending trigger (which Authenticate takes once the
// session exists); else work found now; in
// the last two, a purpose that already has a live session (live: the
// agent's live sessions) is skipped.
func (s *Store) choosePurpose(ctx context.Context, cfg *storage.Config, agent, requested string, live []Session) (string, string, error) {
	if requested != "" {
		return s.requestedPurpose(ctx, agent, requested)
	}
	busy := map[string]string{} // purpose -> live session id
	for _, ses := range live {
		if ses.Agent == agent {
			busy[ses.Purpose] = ses.ID
		}
	}
	for _, p := range []string{storage.PurposeTask, storage.PurposeChat} {
		if busy[p] != "" {
			continue // its trigger stays for when that session is gone
		}
		t, ok, err := s.peekTrigger(agent, p)
		if err != nil {
			return "", "", err
		}
		if ok {
			if p == storage.PurposeTask && t.TaskID == "" {
				t.TaskID = s.taskInProgress(agent)
			}
			return p, t.TaskID, nil
		}
	}
	for _, p := range []string{storage.PurposeTask, storage.PurposeChat} {
		if busy[p] != "" {
			continue
		}
		next, err := s.Work(ctx, cfg, agent, p, nil)
		if err != nil {
			return "", "", err
		}
		if next.IsWorkFor(p) {
			if p == storage.PurposeTask {
				return storage.PurposeTask, next.Task.ID, nil
			}
			return storage.PurposeChat, "", nil
		}
	}
	if len(busy) > 0 {
		return "", "", fmt.Errorf("agent %s has no work for a new session: its live sessions (%v) have it; ask for a purpose explicitly to replace one: %w", agent, busy, ErrNothingToDo)
	}
	return "", "", fmt.Errorf("agent %s has no task in progress, no unread messages, no conversation request and no pending trigger: %w", agent, ErrNothingToDo)
}

// taskInProgress returns the agent's oldest in-progress task, or "".
func (s *Store) taskInProgress(agent string) string {
	tasks, _, _, err := s.Tasks(TaskFilter{Status: StatusInProgress, Assignee: agent})
	if err != nil || len(tasks) == 0 {
		return ""
	}
	return tasks[len(tasks)-1].ID
}

// LiveSessions lists the sessions live at now.
func (s *Store) LiveSessions(now time.Time) ([]Session, error) {
	var out []Session
	err := storage.EachDoc(s.files, storage.Sessions, func(_ string, ses Session) error {
		if ses.live(now) {
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

// touchEvery bounds how often a session's LastSeenAt is rewritten: sliding
// expiry needs minutes of precision, not a disk write per call.
const touchEvery = 30 * time.Second

// CheckSession resolves a token to its live session and slides its expiry.
func (s *Store) CheckSession(ctx context.Context, token string) (Session, error) {
	id, _, ok := strings.Cut(token, ".")
	if !ok || storage.CheckID(storage.PrefixSession, id) != nil {
		return Session{}, fmt.Errorf("session_token is malformed: pass the token authenticate returned: %w", ErrBadToken)
	}
	path, _ := s.files.DocPath(storage.Sessions, id)
	ses, err := s.readSession(path)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
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
	if !ses.live(now) {
		return ses, fmt.Errorf("this session expired after %s without a call: %w", ses.Idle.Duration, ErrSessionExpired)
	}
	if now.Sub(ses.LastSeenAt) > min(touchEvery, ses.Idle.Duration/10) {
		touched, err := storage.UpdateDoc(ctx, s.files, path, storage.ModePrivateFile, func(cur *Session, exists bool) error {
			if !exists || !cur.EndedAt.IsZero() {
				return storage.ErrNoChange
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

// readSession reads a session document, reusing the copy this process
// decoded last while one stat says the file is the same.
func (s *Store) readSession(path string) (Session, error) {
	fi, err := os.Stat(path)
	if err != nil {
		if os.IsNotExist(err) {
			return Session{}, fmt.Errorf("read %s: %w", s.files.Rel(path), storage.ErrNotFound)
		}
		return Session{}, s.files.Failed("read", path, err)
	}
	stamp := lockedfile.StampOf(fi)
	if ses, ok := s.caches.sessions.Get(path, stamp); ok {
		return ses, nil
	}
	var ses Session
	if err := s.files.ReadDoc(path, &ses); err != nil {
		return Session{}, err
	}
	if ses.EndedAt.IsZero() {
		s.caches.sessions.Put(path, ses, stamp)
	} else {
		s.caches.sessions.Drop(path) // ended: read once more at most, not kept for each of a long server's sessions
	}
	return ses, nil
}

// EndSession ends session id for reason (logout, completion, its process
// exiting) through endSession, then runs its end hook. Ending an ended
// session is a no-op.
func (s *Store) EndSession(ctx context.Context, id, reason string) (Session, error) {
	path, err := s.files.DocPath(storage.Sessions, id)
	if err != nil {
		return Session{}, err
	}
	var ses Session
	ended := false
	err = func() error {
		unlock, err := s.lockSessions(ctx)
		if err != nil {
			return err
		}
		defer unlock()
		if err := s.files.ReadDoc(path, &ses); err != nil {
			return fmt.Errorf("session %s: %w", id, err)
		}
		if !ses.EndedAt.IsZero() {
			return nil
		}
		ses, err = s.endSession(path, ses, reason, time.Now().UTC(), false)
		ended = err == nil
		return err
	}()
	if err != nil || !ended {
		return ses, err
	}
	return ses, s.sessionEnded(ctx, ses)
}

// endSession is the one way a session ends, whatever the cause (logout,
// completion, replacement, expiry, its process exiting). The caller holds
// the sessions lock: endSession records the end in the session's document,
// or removes the document (remove: a sweep, for which the end is handled
// now), and returns the ended session, whose end hook (sessionEnded) the
// caller runs once the lock is released (never two locks at once).
func (s *Store) endSession(path string, ses Session, reason string, now time.Time, remove bool) (Session, error) {
	if ses.EndedAt.IsZero() {
		ses.EndedAt, ses.EndReason = now, reason
	}
	if remove {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return ses, fmt.Errorf("remove session %s: %w", ses.ID, err)
		}
		os.Remove(s.wakeLockPath(ses.ID)) // a hook still waiting sees its session gone and exits
		if told, err := s.toldPath(ses.ID); err == nil {
			os.Remove(told)
		}
		return ses, nil
	}
	return ses, s.files.WriteDoc(path, ses, storage.ModePrivateFile)
}

// sessionsEnded runs the end hook of sessions that ended under the
// sessions lock, now released. It is best effort: a conversation the hook
// fails to end still ends at its own timeout.
func (s *Store) sessionsEnded(ctx context.Context, sessions []Session) {
	for _, ses := range sessions {
		_ = s.sessionEnded(ctx, ses)
	}
}

// sessionEnded is the hook point of a session's end, run after its document
// says so (and after the sessions lock is released: never two locks at
// once). A chat session that ends other than by being replaced ends its
// agent's conversations with reason session_expired; a replacing session
// carries them on.
func (s *Store) sessionEnded(ctx context.Context, ses Session) error {
	if path, err := s.files.DocPath(storage.Sessions, ses.ID); err == nil {
		s.caches.sessions.Drop(path)
	}
	s.caches.unread.DropPrefix(ses.ID + "\x00")
	if ses.Purpose != storage.PurposeChat || ses.EndReason == endReplaced {
		return nil
	}
	cfg, err := s.files.LoadConfig()
	if err != nil { // timeouts only matter for reading; the defaults will do
		cfg = &storage.Config{Defaults: storage.DefaultDefaults}
	}
	if err := s.endConversationsOf(ctx, cfg, ses.Agent); err != nil {
		return fmt.Errorf("session %s ended, but its conversations were not: %w", ses.ID, err)
	}
	return nil
}

// session reads a session document by id.
func (s *Store) session(id string) (Session, error) {
	path, err := s.files.DocPath(storage.Sessions, id)
	if err != nil {
		return Session{}, err
	}
	return s.readSession(path)
}

// SetReplyTo records whom respond_chat answers in this session.
func (s *Store) SetReplyTo(ctx context.Context, id, agent string) error {
	path, err := s.files.DocPath(storage.Sessions, id)
	if err != nil {
		return err
	}
	_, err = storage.UpdateDoc(ctx, s.files, path, storage.ModePrivateFile, func(ses *Session, exists bool) error {
		if !exists {
			return fmt.Errorf("session %s: %w", id, storage.ErrNotFound)
		}
		if ses.ReplyTo == agent {
			return storage.ErrNoChange
		}
		ses.ReplyTo = agent
		return nil
	})
	return err
}

// SweepSessions ends the sessions that expired or whose process is gone
// (the watcher's session deadline).
func (s *Store) SweepSessions(ctx context.Context) error {
	_, err := s.sweepSessions(ctx, "", time.Now().UTC())
	return err
}
