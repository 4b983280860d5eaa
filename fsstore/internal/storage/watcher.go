package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"aipm/internal/lockedfile"
)

// WatcherInfo is .ai-pm/watcher.json: who holds the project's watcher lock.
type WatcherInfo struct {
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"startedAt"`
}

func (l layout) watcherLockPath() string { return filepath.Join(l.root, "watcher.lock") }
func (l layout) watcherInfoPath() string { return filepath.Join(l.root, "watcher.json") }

// LockWatcher takes the project's watcher lock (one watcher per project,
// DESIGN section 12) and records this process in watcher.json; release
// gives both back. The lock is the flock of the .ai-pm directory itself,
// which no deletion of a file removes (git clean -fdX deletes the
// gitignored watcher.lock), and that of watcher.lock, which watchers of
// earlier versions take; both are held for the watcher's life and dropped
// by the kernel when it dies.
func (s *Files) LockWatcher() (release func(), err error) {
	unlockDir, ok, err := lockedfile.TryLockDir(s.root)
	if err != nil {
		return nil, fmt.Errorf("watcher lock: %w", err)
	}
	if !ok {
		return nil, s.watcherRunning()
	}
	unlockFile, ok, err := lockedfile.TryLock(s.watcherLockPath(), ModeFile)
	if err != nil {
		unlockDir()
		return nil, fmt.Errorf("watcher lock: %w", err)
	}
	if !ok {
		unlockDir()
		return nil, s.watcherRunning()
	}
	unlock := func() { unlockFile(); unlockDir() }
	info := WatcherInfo{PID: os.Getpid(), StartedAt: time.Now().UTC()}
	if err := s.WriteDoc(s.watcherInfoPath(), info, ModeFile); err != nil {
		unlock()
		return nil, fmt.Errorf("watcher lock: %w", err)
	}
	return func() {
		os.Remove(s.watcherInfoPath())
		unlock()
	}, nil
}

// watcherRunning is the refusal of a second watcher, naming the first.
func (s *Files) watcherRunning() error {
	who := "unknown pid"
	if info, err := s.RunningWatcher(); err == nil && info != nil && info.PID > 0 {
		who = fmt.Sprintf("pid %d, started %s", info.PID, info.StartedAt.Local().Format(time.DateTime))
	}
	return fmt.Errorf("%w on this project (%s): stop it first; aipm status shows it", ErrWatcherRunning, who)
}

// RunningWatcher returns the project's running watcher, or nil if none
// holds the lock (an empty WatcherInfo when watcher.json cannot be read).
// It only reads.
func (s *Files) RunningWatcher() (*WatcherInfo, error) {
	held, err := lockedfile.HeldDir(s.root)
	if err == nil && !held {
		held, err = lockedfile.Held(s.watcherLockPath())
	}
	if err != nil || !held {
		return nil, err
	}
	var info WatcherInfo
	if s.ReadDoc(s.watcherInfoPath(), &info) != nil {
		return &WatcherInfo{}, nil
	}
	return &info, nil
}
