package storage

import (
	"aipm/internal/lockedfile"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
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

// Files is one project's .ai-pm/ directory as storage: its layout, its
// durability, and what this process keeps of its files between calls. Besides
// a bounded cache of append descriptors (lockedfile.Appenders) it holds no
// open files; every operation opens, locks and closes what it needs, so it
// is safe for concurrent use by many goroutines and processes.
type Files struct {
	layout
	Durable atomic.Bool                      // fsync appends and documents: the config's durability, set by LoadConfig
	ttls    atomic.Pointer[notificationTTLs] // the config's [notifications.ttl], set by LoadConfig (nil: defaults)
	// leaseMaxTTL is the config's lease_max_ttl, set by LoadConfig (0:
	// not loaded yet); leaseMaxTTLTried, that LeaseMaxTTL loaded it once.
	leaseMaxTTL      atomic.Int64
	leaseMaxTTLTried atomic.Bool
	// servesMany: this process serves many agents' sessions (aipm serve
	// --http), so its environment's run id and ssh client are no session's.
	ServesMany atomic.Bool
	io         *ioCaches
	seams      seams
	// movedClone says that opening this checkout moved a clone's read
	// cursors (settleCheckout): of processes opening a new clone at once,
	// exactly one does.
	movedClone bool
}

// seams are the few places where a test of the store reaches into its
// Files; newFiles sets what the product uses, and only fsstore's tests
// change them (SetClock, SetBeforeWrite, SetAdvanceAfter), before the
// Files is shared.
type seams struct {
	// now is the clock of the credential back-offs (Now).
	now func() time.Time
	// beforeWrite, when set, runs between UpdateDoc's read and its write:
	// where an editor's save would race it.
	beforeWrite func(path string)
	// advanceAfter is how much a peek must pass over before it moves the
	// committed cursor (a locked, durable write) past it.
	advanceAfter int64
}

// defaultAdvanceAfter is seams.advanceAfter outside tests.
const defaultAdvanceAfter int64 = 1 << 20

// ioCaches is what Files keeps between calls: the descriptors this process
// appends through, and the scans of logs it peeked into.
type ioCaches struct {
	peeks     lockedfile.StatCache[peekScan] // by log, stream, session and ScanKey; no stamps
	cursors   lockedfile.StatCache[Cursors]  // each agent's read.json (ReadCursors)
	appenders lockedfile.Appenders           // open descriptors of the files this process appends to
}

// layout is where everything lives under a project's .ai-pm/ (DESIGN
// section 3): path arithmetic only, no I/O. Every path aipm opens is built
// here, and no request value becomes part of one without its id check.
type layout struct {
	project string // the project directory (parent of .ai-pm)
	root    string // project/.ai-pm
}

// newFiles is the storage of the directory l lays out, not opened: no
// check of the filesystem nor of the checkout.
func newFiles(l layout) *Files {
	return &Files{layout: l, io: &ioCaches{}, seams: seams{now: time.Now, advanceAfter: defaultAdvanceAfter}}
}

// layoutOf is the layout of the project directory projectDir, an absolute
// path: paths only, no I/O.
func layoutOf(projectDir string) layout {
	return layout{project: projectDir, root: filepath.Join(projectDir, DirName)}
}

// OpenFiles opens the .ai-pm/ directory of projectDir (Open, OpenToCheck).
func OpenFiles(projectDir string, refuseNetwork bool) (*Files, error) {
	abs, err := filepath.Abs(projectDir)
	if err != nil {
		return nil, fmt.Errorf("open project %s: %w", projectDir, err)
	}
	root := filepath.Join(abs, DirName)
	fi, err := os.Stat(root)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, Kindf(ErrNotFound, "%s has no %s directory: run aipm init there first", abs, DirName)
		}
		return nil, fmt.Errorf("open project %s: %w", abs, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", root)
	}
	if refuseNetwork {
		if err := checkLocal(root); err != nil {
			return nil, err
		}
	}
	lockedfile.Confine(root)
	st := newFiles(layout{project: abs, root: root})
	lockedfile.RankLocks(root, st.lockRank)
	st.Durable.Store(true)
	if err := st.openCheckout(fi); err != nil {
		return nil, err
	}
	return st, nil
}

// FindProject returns the project directory the way git finds a repository:
// start, then each parent, until one holds a .ai-pm directory.
func FindProject(start string) (string, error) {
	return findProject(start)
}

// LocateProject is the one rule of where a command's project is, as git
// finds its repository: dir (--dir), else envDir ($AIPM_DIR), both as
// given, else the nearest directory upwards from the working directory
// that holds .ai-pm/ (FindProject).
func LocateProject(dir, envDir string) (string, error) {
	switch {
	case dir != "":
		return dir, nil
	case envDir != "":
		return envDir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	return findProject(wd)
}

func findProject(start string) (string, error) {
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
			return "", Kindf(ErrNoProject, "not inside an aipm project (no %s in %s or any parent): run aipm init, or pass --dir", DirName, start)
		}
		dir = parent
	}
}

// setDurability is the one place the store's durability changes: the
// config's, whenever one is loaded (LoadConfig), read atomically by every
// write in flight.
func (s *Files) setDurability(cfg *Config) {
	s.Durable.Store(cfg.Defaults.Durability != DurableNone)
	s.leaseMaxTTL.Store(int64(cfg.Defaults.LeaseMaxTTL.Duration))
}

// LeaseMaxTTL is the config's lease_max_ttl, the longest a lease lasts
// after it was taken (a reader of the leases judges a hand-edited expiry
// by it): the one of the config this process loaded last, else of the
// config as it is now (read once), else the default.
func (s *Files) LeaseMaxTTL() time.Duration {
	if d := time.Duration(s.leaseMaxTTL.Load()); d > 0 {
		return d
	}
	if !s.leaseMaxTTLTried.Swap(true) {
		if cfg, err := s.LoadConfig(); err == nil {
			return cfg.Defaults.LeaseMaxTTL.Duration
		}
	}
	return DefaultDefaults.LeaseMaxTTL.Duration
}

// ProjectDir is the project directory.
func (l layout) ProjectDir() string { return l.project }

// Root is the project's .ai-pm directory.
func (l layout) Root() string { return l.root }

// Rel returns path relative to the project directory, for messages.
func (l layout) Rel(path string) string {
	if r, err := filepath.Rel(l.project, path); err == nil {
		return r
	}
	return path
}

// Failed is the error of op (read, write, lock, append, ...) on path, as
// the storage layer and the rules say every such error: the path once,
// relative to the project (what a person finds the file by, and all an
// agent on another machine should learn of the home's layout), then err's
// own words without their repetition of the path (lockedfile's and the
// operating system's name it again, absolutely), any other path of the
// project in them relative too. errors.Is and errors.As see err.
func (l layout) Failed(op, path string, err error) error {
	return &failed{text: op + " " + l.Rel(path) + ": " + l.words(err.Error(), path), err: err}
}

// failed is an error of Failed.
type failed struct {
	text string
	err  error
}

func (e *failed) Error() string { return e.text }
func (e *failed) Unwrap() error { return e.err }

// words is msg, an error's text about path, without the path it begins
// with ("PATH: ", or "OP PATH: ", absolute or relative), as often as it
// does, and with every other path of the project relative.
func (l layout) words(msg, path string) string {
	names := []string{path, l.Rel(path)}
	for cut := true; cut; {
		cut = false
		for _, name := range names {
			if rest, ok := strings.CutPrefix(msg, name+": "); ok {
				msg, cut = rest, true
				continue
			}
			op, rest, ok := strings.Cut(msg, " "+name+": ")
			if ok && op != "" && !strings.ContainsAny(op, " :") {
				msg, cut = rest, true
			}
		}
	}
	return strings.ReplaceAll(msg, l.project+string(filepath.Separator), "")
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

// leasesDir holds one document, leases.json, not one per entity: a take
// compares a path against every live lease.
const leasesDir = "leases"

// IDPrefixOf is the id prefix of each collection of id documents
// (<collection>/<id>.json); pending/ and runs/ have none.
var IDPrefixOf = map[string]string{
	Conversations: PrefixConversation,
	Delegations:   PrefixDelegation,
	Tasks:         PrefixTask,
	Sessions:      PrefixSession,
}

// ConfigPath is config.toml, the project's configuration.
func (l layout) ConfigPath() string { return filepath.Join(l.root, "config.toml") }

// LeasesPath is leases/leases.json, every live lease of the project.
func (l layout) LeasesPath() string { return filepath.Join(l.root, leasesDir, "leases.json") }

// QuarantineDir is quarantine/, where doctor --repair keeps the bad lines
// it takes out of a log.
func (l layout) QuarantineDir() string { return filepath.Join(l.root, "quarantine") }

// AgentsDir is agents/, which holds a directory per agent.
func (l layout) AgentsDir() string { return filepath.Join(l.root, "agents") }

// CollectionDir is the directory of collection c (Tasks, Sessions, ...).
func (l layout) CollectionDir(c string) string { return filepath.Join(l.root, c) }

// AgentDir is agents/<agent>/; the id is checked first.
func (l layout) AgentDir(agent string) (string, error) {
	if err := CheckAgentID(agent); err != nil {
		return "", err
	}
	return filepath.Join(l.root, "agents", agent), nil
}

func (l layout) agentFile(agent, name string) (string, error) {
	dir, err := l.AgentDir(agent)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

// ChatPath is the agent's chat log, inbox and outbox (DESIGN section 3).
func (l layout) ChatPath(agent string) (string, error) { return l.agentFile(agent, "chat.jsonl") }

// ReadCursorPath is agents/<agent>/read.json, the agent's read cursors
// into its own logs.
func (l layout) ReadCursorPath(agent string) (string, error) { return l.agentFile(agent, "read.json") }

// NotificationsPath holds notifications addressed to the agent.
func (l layout) NotificationsPath(agent string) (string, error) {
	return l.agentFile(agent, "notifications.jsonl")
}

// PasskeyPath holds the salted hash of the agent's passkey (mode 0600).
func (l layout) PasskeyPath(agent string) (string, error) { return l.agentFile(agent, "passkey.json") }

// DocPath is <collection>/<id>.json for an id of the collection's prefix.
func (l layout) DocPath(collection, id string) (string, error) {
	prefix, ok := IDPrefixOf[collection]
	if !ok {
		return "", fmt.Errorf("collection %q has no id documents", collection)
	}
	if err := CheckID(prefix, id); err != nil {
		return "", err
	}
	return filepath.Join(l.root, collection, id+".json"), nil
}

// TriggerPath is pending/<agent>.<purpose>.json (collection Pending) or
// runs/<agent>.<purpose>.json (collection Runs).
func (l layout) TriggerPath(collection, agent, purpose string) (string, error) {
	if collection != Pending && collection != Runs {
		return "", fmt.Errorf("collection %q has no agent.purpose documents", collection)
	}
	if err := CheckAgentID(agent); err != nil {
		return "", err
	}
	if err := CheckPurpose(purpose); err != nil {
		return "", err
	}
	return filepath.Join(l.root, collection, agent+"."+purpose+".json"), nil
}

// OutcomesDir is runs/outcomes/: how each agent's last run of each purpose
// ended, kept after its run record goes.
func (l layout) OutcomesDir() string { return filepath.Join(l.root, Runs, outcomesDir) }

// outcomesDir is the folder of outcomes inside runs/.
const outcomesDir = "outcomes"

// OutcomePath is runs/outcomes/<agent>.<purpose>.json.
func (l layout) OutcomePath(agent, purpose string) (string, error) {
	if err := CheckAgentID(agent); err != nil {
		return "", err
	}
	if err := CheckPurpose(purpose); err != nil {
		return "", err
	}
	return filepath.Join(l.OutcomesDir(), agent+"."+purpose+".json"), nil
}

// LogDir is logs/<agent>/, where the watcher writes a started process's output.
func (l layout) LogDir(agent string) (string, error) {
	if err := CheckAgentID(agent); err != nil {
		return "", err
	}
	return filepath.Join(l.logsDir(), agent), nil
}

// DenialsPath is logs/<agent>/denials.<run>.jsonl: the tool calls aipm's
// hook denied in one client run of agent, beside the run's log (out of
// the watcher's sight, as logs/ is).
func (l layout) DenialsPath(agent, run string) (string, error) {
	dir, err := l.LogDir(agent)
	if err != nil {
		return "", err
	}
	if err := CheckID(PrefixRun, run); err != nil {
		return "", err
	}
	return filepath.Join(dir, "denials."+run+".jsonl"), nil
}

// CredentialPath is credentials/<agent>.passkey (mode 0600, kept out of
// git): the passkey the watcher hands to the agent processes it starts, as
// a file named by AIPM_PASSKEY_FILE, never in an argument.
func (l layout) CredentialPath(agent string) (string, error) {
	if err := CheckAgentID(agent); err != nil {
		return "", err
	}
	return filepath.Join(l.root, "credentials", agent+".passkey"), nil
}

// dirMode is the mode of a directory created under .ai-pm.
func (l layout) dirMode(dir string) os.FileMode {
	if dir == l.CollectionDir(Sessions) || dir == filepath.Join(l.CollectionDir(Sessions), SessionIndexDir) {
		return ModePrivateDir
	}
	return ModeDir
}

// EnsureAgentDir creates agents/<agent>/ if it is missing (an agent added to
// config.toml by hand has none until its first message).
func (s *Files) EnsureAgentDir(agent string) error {
	dir, err := s.AgentDir(agent)
	if err != nil {
		return err
	}
	return s.MkdirAll(dir)
}

// WatchedDirs are the directories whose changes matter to a view of the
// whole project (aipm status --watch): .ai-pm itself (a new collection),
// each collection but logs and quarantine, and each agent's directory.
func (s *Files) WatchedDirs() []string {
	dirs := []string{s.root}
	entries, _ := os.ReadDir(s.root)
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || e.Name() == "logs" || e.Name() == "quarantine" {
			continue
		}
		dir := filepath.Join(s.root, e.Name())
		dirs = append(dirs, dir)
		if dir == s.AgentsDir() {
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

// The session index: sessions/by-agent/<agent>.json lists the ids of the
// agent's session documents, so that authenticate reads its own agent's
// sessions and no one else's (a project with 10^4 sessions authenticates
// as fast as one with 10). Sessions are runtime state that humans do not
// edit (DESIGN section 3), so the index can be kept rather than re-derived
// on every call; it is kept under the sessions lock with one invariant:
//
//	every session document's id is in its agent's index file
//
// (an id is added before its document is written and dropped after its
// document is removed, so a crash leaves at worst an id without a document,
// which the next reader drops). A project without sessions/by-agent/ (made
// by an older aipm, or a human who removed it) gets it rebuilt from every
// session document, once, by the first writer that finds it missing.

// SessionIndexDir is the directory of the session index inside sessions/.
const SessionIndexDir = "by-agent"

// CompactionPath is the record of what compaction dropped from the
// agent's chat log (agents/<agent>/compacted.json): doctor's mirror check
// does not restore what was dropped on purpose.
func (l layout) CompactionPath(agent string) (string, error) {
	return l.agentFile(agent, "compacted.json")
}

// CompactLockPath is compact.lock, held while a compaction of the
// project's logs runs (one at a time).
func (l layout) CompactLockPath() string { return filepath.Join(l.root, "compact.lock") }
