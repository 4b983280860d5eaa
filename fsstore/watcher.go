package fsstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"aipm/fsstore/lockedfile"
)

// WatcherInfo is .ai-pm/watcher.json: who holds the project's watcher lock.
type WatcherInfo struct {
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"startedAt"`
}

// ErrWatcherRunning says another watcher holds the project.
var ErrWatcherRunning = errors.New("another aipm watch is running")

func (s *Store) watcherLockPath() string { return filepath.Join(s.root, "watcher.lock") }
func (s *Store) watcherInfoPath() string { return filepath.Join(s.root, "watcher.json") }

// LockWatcher takes the project's watcher lock (one watcher per project,
// DESIGN section 12) and records this process in watcher.json; release
// gives both back. The lock is the flock of watcher.lock, held for the
// watcher's life and dropped by the kernel when it dies.
func (s *Store) LockWatcher() (release func(), err error) {
	unlock, ok, err := lockedfile.TryLock(s.watcherLockPath(), ModeFile)
	if err != nil {
		return nil, fmt.Errorf("watcher lock: %w", err)
	}
	if !ok {
		who := "unknown pid"
		if info, err := s.RunningWatcher(); err == nil && info != nil {
			who = fmt.Sprintf("pid %d, started %s", info.PID, info.StartedAt.Local().Format(time.DateTime))
		}
		return nil, fmt.Errorf("%w on this project (%s): stop it first; aipm status shows it", ErrWatcherRunning, who)
	}
	info := WatcherInfo{PID: os.Getpid(), StartedAt: time.Now().UTC()}
	if err := s.writeDoc(s.watcherInfoPath(), info, ModeFile); err != nil {
		unlock()
		return nil, fmt.Errorf("watcher lock: %w", err)
	}
	return func() {
		os.Remove(s.watcherInfoPath())
		unlock()
	}, nil
}

// RunningWatcher returns the project's running watcher, or nil if none
// holds the lock (an empty WatcherInfo when watcher.json cannot be read).
// It only reads.
func (s *Store) RunningWatcher() (*WatcherInfo, error) {
	if held, err := lockedfile.Held(s.watcherLockPath()); err != nil || !held {
		return nil, err
	}
	var info WatcherInfo
	if s.readDoc(s.watcherInfoPath(), &info) != nil {
		return &WatcherInfo{}, nil
	}
	return &info, nil
}
