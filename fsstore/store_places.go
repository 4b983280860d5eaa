package fsstore

// The storage's methods that callers need, forwarded under the same names:
// the project's places, the config in force, the watcher's lock and its
// view of changes, and what the links settle (mcpserver/links.go). Store
// embeds nothing, so that every method of a *Store is declared in fsstore.

import (
	"context"

	"aipm/fsstore/internal/storage"
)

// AcknowledgeCall is AcknowledgeVia for a call that proved the answer
// before it was read (mcpserver/links.go). A batch only shown to the model
// (an interrupt in a replaced answer or a client hook: PendingBatch.Shown)
// is read only by a call that lets the session comply with it (complies:
// the tools that pass an interrupt); any other call keeps it, so that the
// interrupt in it still stops the session. kept says such a batch is still
// held.
func (s *Store) AcknowledgeCall(ctx context.Context, agent string, session string, via string, complies bool, except ...string) (bool, error) {
	return s.files.AcknowledgeCall(ctx, agent, session, via, complies, except...)
}

// AcknowledgeShown commits the batches of session that were only shown
// (an interrupt a client hook showed whole) but those in except, the
// streams the call reads itself: the call via complies with it.
func (s *Store) AcknowledgeShown(ctx context.Context, agent string, session string, via string, except ...string) error {
	return s.files.AcknowledgeShown(ctx, agent, session, via, except...)
}

// AgentDir is agents/<agent>/; the id is checked first.
func (s *Store) AgentDir(agent string) (string, error) { return s.files.AgentDir(agent) }

// ChatPath is the agent's chat log, inbox and outbox (DESIGN section 3).
func (s *Store) ChatPath(agent string) (string, error) { return s.files.ChatPath(agent) }

// CollectionDir is the directory of a collection (Tasks, Sessions, ...).
func (s *Store) CollectionDir(c string) string { return s.files.CollectionDir(c) }

// ConfigPath is .ai-pm/config.toml.
func (s *Store) ConfigPath() string { return s.files.ConfigPath() }

// CredentialPath is credentials/<agent>.passkey (mode 0600, kept out of
// git): the passkey the watcher hands to the agent processes it starts, as
// a file named by AIPM_PASSKEY_FILE, never in an argument.
func (s *Store) CredentialPath(agent string) (string, error) { return s.files.CredentialPath(agent) }

// DocPath is <collection>/<id>.json for an id of the collection's prefix.
func (s *Store) DocPath(collection string, id string) (string, error) {
	return s.files.DocPath(collection, id)
}

// LeasesPath is leases/leases.json, the one document of the file leases.
func (s *Store) LeasesPath() string { return s.files.LeasesPath() }

// LoadConfig reads and checks the project's config.toml.
func (s *Store) LoadConfig() (*Config, error) { return s.files.LoadConfig() }

// LockWatcher takes the project's watcher lock (one watcher per project,
// DESIGN section 12) and records this process in watcher.json; release
// gives both back. The lock is the flock of the .ai-pm directory itself,
// which no deletion of a file removes (git clean -fdX deletes the
// gitignored watcher.lock), and that of watcher.lock, which watchers of
// earlier versions take; both are held for the watcher's life and dropped
// by the kernel when it dies.
func (s *Store) LockWatcher() (func(), error) { return s.files.LockWatcher() }

// LogDir is logs/<agent>/, where the watcher writes a started process's output.
func (s *Store) LogDir(agent string) (string, error) { return s.files.LogDir(agent) }

// MkdirAll creates dir and its missing parents with the layout's modes.
func (s *Store) MkdirAll(dir string) error { return s.files.MkdirAll(dir) }

// NotificationsPath holds notifications addressed to the agent.
func (s *Store) NotificationsPath(agent string) (string, error) {
	return s.files.NotificationsPath(agent)
}

// OnNetworkFilesystem returns the name of the network filesystem .ai-pm/
// is on, or "" when it is on a local one (or statfs fails: doctor reports
// that as a problem of its own).
func (s *Store) OnNetworkFilesystem() string { return s.files.OnNetworkFilesystem() }

// PasskeyPath holds the salted hash of the agent's passkey (mode 0600).
func (s *Store) PasskeyPath(agent string) (string, error) { return s.files.PasskeyPath(agent) }

// ProjectDir is the project directory; Root is its .ai-pm directory.
func (s *Store) ProjectDir() string { return s.files.ProjectDir() }

// QuietChange says whether a change to path can never change a reaction
// of the watcher: anything under logs/, a hidden file (a lock, the
// temporary file of an atomic write), the watcher's own lock and record,
// and an agent's read cursors.
func (s *Store) QuietChange(path string) bool { return s.files.QuietChange(path) }

// UseSpares makes this process's document writes in the project take
// their temp files from .ai-pm/.spare/ by a rename: a new file costs a
// write most of a millisecond where a rename costs hundredths
// (lockedfile.UseSpares). fill, called as the process ends, makes the
// spares taken again. For aipm serve.
func (s *Store) UseSpares() (fill func()) { return s.files.UseSpares() }

// Receipts reads agent's receipts into what each message id went
// through (the first of each event). Lines that are not receipts are
// skipped.
func (s *Store) Receipts(agent string) (map[string]Seen, error) { return s.files.Receipts(agent) }

// Rel returns path relative to the project directory, for messages.
func (s *Store) Rel(path string) string { return s.files.Rel(path) }

// Root is the project's .ai-pm directory.
func (s *Store) Root() string { return s.files.Root() }

// RunningWatcher returns the project's running watcher, or nil if none
// holds the lock (an empty WatcherInfo when watcher.json cannot be read).
// It only reads.
func (s *Store) RunningWatcher() (*storage.WatcherInfo, error) { return s.files.RunningWatcher() }

// TriggerPath is pending/<agent>.<purpose>.json (collection Pending) or
// runs/<agent>.<purpose>.json (collection Runs).
func (s *Store) TriggerPath(collection string, agent string, purpose string) (string, error) {
	return s.files.TriggerPath(collection, agent, purpose)
}

// UnwatchedDir says whether the watcher leaves dir, and everything below
// it, unwatched: logs/, the started processes' output.
func (s *Store) UnwatchedDir(dir string) bool { return s.files.UnwatchedDir(dir) }

// WatchedDirs are the directories whose changes matter to a view of the
// whole project (aipm status --watch): .ai-pm itself (a new collection),
// each collection but logs and quarantine, and each agent's directory.
func (s *Store) WatchedDirs() []string { return s.files.WatchedDirs() }
