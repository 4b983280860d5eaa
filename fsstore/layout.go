package fsstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// DirName is the name of the state directory inside a project.
const DirName = ".ai-pm"

// File and directory modes (DESIGN section 14). Credentials and sessions are
// private to the user; everything else is readable so that humans and tools
// can inspect it.
const (
	ModeFile        os.FileMode = 0o644
	ModePrivateFile os.FileMode = 0o600
	ModeDir         os.FileMode = 0o755
	ModePrivateDir  os.FileMode = 0o700
)

// Store is one project's .ai-pm/ directory. It holds no open files; every
// operation opens, locks and closes what it needs, so a Store is safe for
// concurrent use by many goroutines and processes.
type Store struct {
	project string      // the project directory (parent of .ai-pm)
	root    string      // project/.ai-pm
	durable atomic.Bool // fsync appends and documents: the config's durability, set by LoadConfig
	caches  *caches
}

// caches holds what this process keeps between calls: what it read from
// files (revalidated by stat) and the descriptors it appends through.
type caches struct {
	sessions statCache[Session]
	unread   statCache[unreadState]
	peeks    statCache[peekScan] // by log, stream, session and ScanKey; no stamps
	tasks    taskIndex

	appenders appenders // open descriptors of the files this process appends to
}

// Open returns the store of the project directory dir, which must contain
// .ai-pm/. Appends fsync until a loaded config says durability = "none".
func Open(projectDir string) (*Store, error) {
	abs, err := filepath.Abs(projectDir)
	if err != nil {
		return nil, fmt.Errorf("open project %s: %w", projectDir, err)
	}
	root := filepath.Join(abs, DirName)
	fi, err := os.Stat(root)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, kindf(ErrNotFound, "%s has no %s directory: run aipm init there first", abs, DirName)
		}
		return nil, fmt.Errorf("open project %s: %w", abs, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", root)
	}
	st := &Store{project: abs, root: root, caches: &caches{}}
	st.durable.Store(true)
	return st, nil
}

// FindProject returns the project directory the way git finds a repository:
// start, then each parent, until one holds a .ai-pm directory.
func FindProject(start string) (string, error) {
	dir, err := filepath.Abs(start)
	if err != nil {
		return "", fmt.Errorf("find project from %s: %w", start, err)
	}
	for {
		if fi, err := os.Stat(filepath.Join(dir, DirName)); err == nil && fi.IsDir() {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("not inside an aipm project (no %s in %s or any parent): run aipm init, or pass --dir", DirName, start)
		}
		dir = parent
	}
}

// setDurability is the one place the store's durability changes: the
// config's, whenever one is loaded (LoadConfig), read atomically by every
// write in flight.
func (s *Store) setDurability(cfg *Config) {
	s.durable.Store(cfg.Defaults.Durability != DurableNone)
}

// ProjectDir is the project directory; Root is its .ai-pm directory.
func (s *Store) ProjectDir() string { return s.project }
func (s *Store) Root() string       { return s.root }

// Rel returns path relative to the project directory, for messages.
func (s *Store) Rel(path string) string {
	if r, err := filepath.Rel(s.project, path); err == nil {
		return r
	}
	return path
}

// Collections of JSON documents, one file per entity.
const (
	Conversations = "conversations"
	Delegations   = "delegations"
	Tasks         = "tasks"
	Sessions      = "sessions"
	Pending       = "pending"
	Runs          = "runs"
)

var idPrefixOf = map[string]string{
	Conversations: PrefixConversation,
	Delegations:   PrefixDelegation,
	Tasks:         PrefixTask,
	Sessions:      PrefixSession,
}

func (s *Store) ConfigPath() string            { return filepath.Join(s.root, "config.toml") }
func (s *Store) quarantineDir() string         { return filepath.Join(s.root, "quarantine") }
func (s *Store) agentsDir() string             { return filepath.Join(s.root, "agents") }
func (s *Store) CollectionDir(c string) string { return filepath.Join(s.root, c) }

// AgentDir is agents/<agent>/; the id is checked first.
func (s *Store) AgentDir(agent string) (string, error) {
	if err := CheckAgentID(agent); err != nil {
		return "", err
	}
	return filepath.Join(s.root, "agents", agent), nil
}

func (s *Store) agentFile(agent, name string) (string, error) {
	dir, err := s.AgentDir(agent)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

// ChatPath is the agent's chat log, inbox and outbox (DESIGN section 3).
func (s *Store) ChatPath(agent string) (string, error) { return s.agentFile(agent, "chat.jsonl") }

// readCursorPath holds the agent's read cursors into its own files.
func (s *Store) readCursorPath(agent string) (string, error) { return s.agentFile(agent, "read.json") }

// NotificationsPath holds notifications addressed to the agent.
func (s *Store) NotificationsPath(agent string) (string, error) {
	return s.agentFile(agent, "notifications.jsonl")
}

// PasskeyPath holds the salted hash of the agent's passkey (mode 0600).
func (s *Store) PasskeyPath(agent string) (string, error) { return s.agentFile(agent, "passkey.json") }

// DocPath is <collection>/<id>.json for an id of the collection's prefix.
func (s *Store) DocPath(collection, id string) (string, error) {
	prefix, ok := idPrefixOf[collection]
	if !ok {
		return "", fmt.Errorf("collection %q has no id documents", collection)
	}
	if err := CheckID(prefix, id); err != nil {
		return "", err
	}
	return filepath.Join(s.root, collection, id+".json"), nil
}

// TriggerPath is pending/<agent>.<purpose>.json (collection Pending) or
// runs/<agent>.<purpose>.json (collection Runs).
func (s *Store) TriggerPath(collection, agent, purpose string) (string, error) {
	if collection != Pending && collection != Runs {
		return "", fmt.Errorf("collection %q has no agent.purpose documents", collection)
	}
	if err := CheckAgentID(agent); err != nil {
		return "", err
	}
	if err := CheckPurpose(purpose); err != nil {
		return "", err
	}
	return filepath.Join(s.root, collection, agent+"."+purpose+".json"), nil
}

// LogDir is logs/<agent>/, where the watcher writes a started process's output.
func (s *Store) LogDir(agent string) (string, error) {
	if err := CheckAgentID(agent); err != nil {
		return "", err
	}
	return filepath.Join(s.root, "logs", agent), nil
}

// dirMode is the mode of a directory created under .ai-pm.
func (s *Store) dirMode(dir string) os.FileMode {
	if dir == s.CollectionDir(Sessions) || dir == filepath.Join(s.CollectionDir(Sessions), sessionIndexDir) {
		return ModePrivateDir
	}
	return ModeDir
}

// ensureAgentDir creates agents/<agent>/ if it is missing (an agent added to
// config.toml by hand has none until its first message).
func (s *Store) ensureAgentDir(agent string) error {
	dir, err := s.AgentDir(agent)
	if err != nil {
		return err
	}
	return s.mkdirAll(dir)
}

// WatchedDirs are the directories whose changes matter to a view of the
// whole project (aipm status --watch): .ai-pm itself (a new collection),
// each collection but logs and quarantine, and each agent's directory.
func (s *Store) WatchedDirs() []string {
	dirs := []string{s.root}
	entries, _ := os.ReadDir(s.root)
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || e.Name() == "logs" || e.Name() == "quarantine" {
			continue
		}
		dir := filepath.Join(s.root, e.Name())
		dirs = append(dirs, dir)
		if dir == s.agentsDir() {
			agents, _ := os.ReadDir(dir)
			for _, a := range agents {
				if a.IsDir() {
					dirs = append(dirs, filepath.Join(dir, a.Name()))
				}
			}
		}
	}
	return dirs
}
