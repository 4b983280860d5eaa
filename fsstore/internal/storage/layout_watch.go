package storage

import (
	"path/filepath"
	"strings"
)

// What aipm watch may leave alone under .ai-pm/. The layout knows the
// names; the watcher asks it.

// logsDir is logs/, where the watcher writes a started process's output.
func (l layout) logsDir() string { return filepath.Join(l.root, "logs") }

// UnwatchedDir says whether the watcher leaves dir, and everything below
// it, unwatched: logs/, the started processes' output.
func (l layout) UnwatchedDir(dir string) bool { return dir == l.logsDir() }

// QuietChange says whether a change to path can never change a reaction
// of the watcher: anything under logs/, a hidden file (a lock, the
// temporary file of an atomic write), the watcher's own lock and record,
// and an agent's read cursors.
func (l layout) QuietChange(path string) bool {
	logs := l.logsDir()
	if path == logs || strings.HasPrefix(path, logs+string(filepath.Separator)) {
		return true
	}
	if strings.HasPrefix(filepath.Base(path), ".") || path == l.watcherLockPath() || path == l.watcherInfoPath() {
		return true
	}
	agentDir := filepath.Dir(path)
	if filepath.Dir(agentDir) != l.AgentsDir() {
		return false
	}
	cursor, err := l.ReadCursorPath(filepath.Base(agentDir))
	return err == nil && path == cursor
}
