package fsstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"aipm/fsstore/internal/storage"
	"aipm/internal/lockedfile"
)

// Environment of a process the watcher starts (DESIGN section 12).
const (
	EnvAgentID     = "AIPM_AGENT_ID"
	EnvPasskey     = "AIPM_PASSKEY"
	EnvPasskeyFile = "AIPM_PASSKEY_FILE"
	EnvPurpose     = "AIPM_PURPOSE"
	EnvProjectDir  = "AIPM_PROJECT_DIR"
	// EnvRunID names the run; aipm serve records it in the sessions it opens.
	EnvRunID = "AIPM_RUN_ID"
)

// Run is runs/<agent>.<purpose>.json: a process the watcher started, while
// it lives.
type Run struct {
	ID        string    `json:"id"`
	Agent     string    `json:"agentId"`
	Purpose   string    `json:"purpose"`
	PID       int       `json:"pid"`
	Command   []string  `json:"command"`
	Log       string    `json:"log"`
	Reason    string    `json:"reason,omitempty"`
	StartedAt time.Time `json:"startedAt"`
}

// Alive says whether the run's process still exists.
func (r Run) Alive() bool { return r.PID > 0 && processAlive(r.PID, "") }

// Claim records r as runs/<agent>.<purpose>.json unless a live process
// already holds that slot: the claim, under the runs lock, that makes a
// start happen once per agent and purpose. A record whose process is gone
// is replaced (and returned as stale, so its sessions can be ended).
//
// A claimed slot comes with slot, the open file holding the flock of
// runs/.<agent>.<purpose>.lock: the caller hands it to the process it
// starts (exec.Cmd.ExtraFiles), which holds the lock for as long as it and
// its children live, then closes its own copy. A slot whose lock is held
// is never claimed, even when its record has no pid yet (a watcher killed
// between starting the process and recording its pid) or no record at all.
func (rt RunTable) Claim(ctx context.Context, r Run) (claimed bool, stale *Run, slot *os.File, err error) {
	s := rt.s
	path, err := s.files.TriggerPath(storage.Runs, r.Agent, r.Purpose)
	if err != nil {
		return false, nil, nil, err
	}
	if err := s.files.MkdirAll(filepath.Dir(path)); err != nil {
		return false, nil, nil, fmt.Errorf("claim run: %w", err)
	}
	// Taken without waiting, so holding it while UpdateDoc waits for the
	// runs lock cannot deadlock.
	slot, ok, err := lockedfile.TryLockFile(slotLockPath(path), storage.ModeFile)
	if err != nil || !ok {
		return false, nil, nil, wrapErr("claim run", err)
	}
	_, err = storage.UpdateDoc(ctx, s.files, path, storage.ModeFile, func(doc *Run, exists bool) error {
		stale, claimed = nil, false
		if exists && doc.Alive() {
			return storage.ErrNoChange
		}
		if exists {
			old := *doc
			stale = &old
		}
		*doc = r
		claimed = true
		return nil
	})
	if err != nil || !claimed {
		slot.Close()
		return false, nil, nil, err
	}
	return true, stale, slot, nil
}

// slotLockPath is runs/.<agent>.<purpose>.lock beside the run record path.
func slotLockPath(path string) string {
	return filepath.Join(filepath.Dir(path), "."+strings.TrimSuffix(filepath.Base(path), ".json")+".lock")
}

// Live says whether r's process still runs: its pid is alive, or the
// run's slot lock (which the process inherited) is held.
func (rt RunTable) Live(r Run) bool {
	if r.Alive() {
		return true
	}
	path, err := rt.s.files.TriggerPath(storage.Runs, r.Agent, r.Purpose)
	if err != nil {
		return false
	}
	held, err := lockedfile.Held(slotLockPath(path))
	return err == nil && held
}

// wrapErr adds what to err, or returns nil.
func wrapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// SetPID records the pid of a claimed run once its process started.
func (rt RunTable) SetPID(ctx context.Context, r Run) error {
	s := rt.s
	path, err := s.files.TriggerPath(storage.Runs, r.Agent, r.Purpose)
	if err != nil {
		return err
	}
	_, err = storage.UpdateDoc(ctx, s.files, path, storage.ModeFile, func(doc *Run, exists bool) error {
		if !exists || doc.ID != r.ID {
			return storage.ErrNoChange
		}
		doc.PID = r.PID
		return nil
	})
	return err
}

// Release removes the run record of id (if it is still that run's) and
// ends the sessions its process opened: their conversations end with
// session_expired (EndSession's hook).
func (rt RunTable) Release(ctx context.Context, r Run) error {
	s := rt.s
	path, err := s.files.TriggerPath(storage.Runs, r.Agent, r.Purpose)
	if err != nil {
		return err
	}
	err = func() error {
		unlock, err := s.files.LockDir(ctx, filepath.Dir(path))
		if err != nil {
			return err
		}
		defer unlock()
		var cur Run
		if err := s.files.ReadDoc(path, &cur); err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				return nil
			}
			return err
		}
		if cur.ID != r.ID {
			return nil
		}
		return os.Remove(path)
	}()
	if err != nil {
		return fmt.Errorf("release run %s: %w", r.ID, err)
	}
	return s.Runs().endSessions(ctx, r)
}

// endSessions ends the live sessions the run's process opened: those
// that carry its id (AIPM_RUN_ID, set by the watcher) and, for a command
// that runs ssh, those it opened through ssh, where its environment does
// not reach (DESIGN section 17): a session of the run's agent and purpose
// with no run id, opened under sshd (SSHClient) after the run started,
// belongs to the run, as an agent the run started on another machine (ssh
// hostB claude ...) connects back with ssh home aipm serve --agent ID. At
// most one session per agent and purpose lives anyway, so a second one
// opened by hand meanwhile would have replaced the run's.
func (rt RunTable) endSessions(ctx context.Context, r Run) error {
	return rt.endRunSessions(ctx, r, runsSSH(r.Command))
}

// EndStaleSessions ends the live sessions that carry the id of a run whose
// record outlived its process (found at the next claim): only those, since
// a session opened over ssh since the run started may be anyone's.
func (rt RunTable) EndStaleSessions(ctx context.Context, r Run) error {
	return rt.endRunSessions(ctx, r, false)
}

func (rt RunTable) endRunSessions(ctx context.Context, r Run, overSSH bool) error {
	s := rt.s
	live, err := s.LiveSessions(time.Now())
	if err != nil {
		return err
	}
	for _, ses := range live {
		if ses.RunID == r.ID || (overSSH && ranOverSSH(ses, r)) {
			if _, err := s.EndSession(ctx, ses.ID, EndExited); err != nil {
				return err
			}
		}
	}
	return nil
}

// ranOverSSH says whether ses is run's session opened through ssh.
func ranOverSSH(ses Session, r Run) bool {
	return ses.RunID == "" && ses.SSHClient != "" && ses.Agent == r.Agent && ses.Purpose == r.Purpose &&
		!r.StartedAt.IsZero() && !ses.CreatedAt.Before(r.StartedAt)
}

// runsSSH says whether an agent's command runs ssh (ssh, autossh, or a
// word of a shell command line such as sh -c "ssh hostB claude"): only
// then may its agent's sessions come back over ssh.
func runsSSH(command []string) bool {
	for _, word := range command {
		for _, f := range strings.Fields(word) {
			if b := filepath.Base(f); b == "ssh" || b == "autossh" {
				return true
			}
		}
	}
	return false
}

// List lists runs/, oldest first. Unreadable records are skipped.
func (rt RunTable) List() ([]Run, error) {
	s := rt.s
	var out []Run
	err := storage.EachDoc(s.files, storage.Runs, func(_ string, r Run) error { out = append(out, r); return nil })
	slices.SortFunc(out, func(a, b Run) int { return a.StartedAt.Compare(b.StartedAt) })
	return out, err
}

// OpenLog opens run's log file (logs/<agent>/...) for appending,
// creating it and its directory: the started process writes its output
// there.
func (rt RunTable) OpenLog(run Run) (*os.File, error) {
	s := rt.s
	if err := s.files.MkdirAll(filepath.Dir(run.Log)); err != nil {
		return nil, s.files.Failed("run log", run.Log, err)
	}
	f, err := lockedfile.OpenFile(run.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, storage.ModeFile)
	if err != nil {
		return nil, s.files.Failed("run log", run.Log, err)
	}
	return f, nil
}

// RunTable is runs/: the processes aipm watch started, one per agent and
// purpose, with their logs and what their end does to sessions.
type RunTable struct{ s *Store }

// Runs is the project's table of the processes the watcher started.
func (s *Store) Runs() RunTable { return RunTable{s: s} }

// logStamp is the time at the start of a run log's name.
const logStamp = "20060102T150405.000000000Z"

// LogPath is the log of agent's process for purpose started at:
// logs/<agent>/<time>.<purpose>.log (History reads the names back).
func (rt RunTable) LogPath(agent, purpose string, at time.Time) (string, error) {
	dir, err := rt.s.files.LogDir(agent)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, at.UTC().Format(logStamp)+"."+purpose+".log"), nil
}

// Started is one process the watcher started, as its log file names it.
type Started struct {
	Agent   string    `json:"agentId"`
	Purpose string    `json:"purpose"`
	At      time.Time `json:"at"`
}

// History lists the processes the watcher started for agents, newest
// first, at most limit of them, from the names of their log files
// (logs/<agent>/<time>.<purpose>.log): a start's record outlives its run.
func (rt RunTable) History(agents []string, limit int) ([]Started, error) {
	var out []Started
	for _, agent := range agents {
		dir, err := rt.s.files.LogDir(agent)
		if err != nil {
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue // none yet
		}
		for _, e := range entries {
			name, ok := strings.CutSuffix(e.Name(), ".log")
			i := strings.LastIndexByte(name, '.')
			if !ok || i < 0 {
				continue
			}
			at, err := time.Parse(logStamp, name[:i])
			if err != nil {
				continue
			}
			out = append(out, Started{Agent: agent, Purpose: name[i+1:], At: at})
		}
	}
	slices.SortFunc(out, func(a, b Started) int { return b.At.Compare(a.At) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
