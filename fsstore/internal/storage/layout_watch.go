package storage

import (
	"path/filepath"
	"strings"

	"aipm/internal/lockedfile"
)

// What aipm watch may leave alone under .ai-pm/. The layout knows the
// names; the watcher asks it.

// logsDir is logs/, where the watcher writes a started process's output.
func (l layout) logsDir() string { return filepath.Join(l.root, "logs") }

// spareDir is .spare/, the empty files made ahead that atomic writes take
// their temp file from (lockedfile.UseSpares): plumbing, as a lock is,
// nothing in it state.
func (l layout) spareDir() string { return filepath.Join(l.root, ".spare") }

// UseSpares makes this process's atomic writes in the project take their
// temp files from .spare/, which fill (called as the process ends) fills
// again (lockedfile.UseSpares): for aipm serve, which starts, writes a few
// documents before its first answer and ends.
func (l layout) UseSpares() (fill func()) { return lockedfile.UseSpares(l.root, l.spareDir()) }

// UnwatchedDir says whether the watcher leaves dir, and everything below
// it, unwatched: logs/, the started processes' output, and .spare/.
func (l layout) UnwatchedDir(dir string) bool { return dir == l.logsDir() || dir == l.spareDir() }

// QuietChange says whether a change to path can never change a reaction
// of the watcher: anything under logs/ or .spare/, a hidden file (a lock,
// the temporary file of an atomic write), the watcher's own lock and
// record, and an agent's read cursors.
func (l layout) QuietChange(path string) bool {
	for _, dir := range []string{l.logsDir(), l.spareDir()} {
		if path == dir || strings.HasPrefix(path, dir+string(filepath.Separator)) {
			return true
		}
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
