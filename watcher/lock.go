package watcher

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"

	"aipm/fsstore"
)

// Info is .ai-pm/watcher.json: who holds the project's watcher lock.
type Info struct {
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"startedAt"`
}

// ErrRunning says another watcher holds the project.
var ErrRunning = errors.New("another aipm watch is running")

func lockPath(s *fsstore.Store) string { return filepath.Join(s.Root(), "watcher.lock") }
func infoPath(s *fsstore.Store) string { return filepath.Join(s.Root(), "watcher.json") }

// acquire takes the project's watcher lock (one watcher per project) and
// records this process in watcher.json; release gives both back.
func acquire(s *fsstore.Store) (release func(), err error) {
	fl := flock.New(lockPath(s), flock.SetPermissions(fsstore.ModeFile))
	ok, err := fl.TryLock()
	if err != nil {
		return nil, fmt.Errorf("watcher lock: %w", err)
	}
	if !ok {
		who := "unknown pid"
		if info, err := Running(s); err == nil && info != nil {
			who = fmt.Sprintf("pid %d, started %s", info.PID, info.StartedAt.Local().Format(time.DateTime))
		}
		return nil, fmt.Errorf("%w on this project (%s): stop it first; aipm status shows it", ErrRunning, who)
	}
	info := Info{PID: os.Getpid(), StartedAt: time.Now().UTC()}
	if err := s.WriteDoc(infoPath(s), info, fsstore.ModeFile); err != nil {
		fl.Unlock()
		return nil, fmt.Errorf("watcher lock: %w", err)
	}
	return func() {
		os.Remove(infoPath(s))
		fl.Unlock()
	}, nil
}

// Running returns the project's running watcher, or nil if none holds the
// lock. It only reads.
func Running(s *fsstore.Store) (*Info, error) {
	fl := flock.New(lockPath(s), flock.SetPermissions(fsstore.ModeFile))
	if _, err := os.Stat(lockPath(s)); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	ok, err := fl.TryRLock()
	if err != nil {
		return nil, err
	}
	if ok {
		fl.Unlock()
		return nil, nil
	}
	data, err := os.ReadFile(infoPath(s))
	if err != nil {
		return &Info{}, nil
	}
	var info Info
	if err := json.Unmarshal(data, &info); err != nil {
		return &Info{}, nil
	}
	return &info, nil
}
