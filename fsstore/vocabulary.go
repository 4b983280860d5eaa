package fsstore

// The vocabulary of a project that callers use: the names of the storage
// beneath the rules (fsstore/internal/storage) that a caller needs to speak
// to the store, given here under the same names, as aliases and constants,
// the way package os gives its callers io/fs's FileInfo and PathError. No
// caller imports the storage layer; the compiler holds that.

import (
	"time"

	"aipm/fsstore/internal/storage"
)

type (
	// Agent is one [[agents]] entry.
	Agent = storage.Agent
	// CodeError is a refusal with a stable code (the seeds' error codes), so
	// that the MCP tools and the CLI say the same thing.
	CodeError = storage.CodeError
	// Config is .ai-pm/config.toml: the project, its defaults and its agents.
	Config = storage.Config
	// Cursor is a reader's place in a JSONL file (DESIGN section 4, rule 6):
	// see lockedfile.Cursor.
	Cursor = storage.Cursor
	// Duration is a TOML string such as "90s" or "1h".
	Duration = storage.Duration
	// LineError locates a problem inside a file as path:line: reason
	// (DESIGN section 4, rule 5).
	LineError = storage.LineError
	// Mark is a place in one of an agent's logs: the records that start before
	// it, in the file it was measured in, have been told to a session's model.
	// A file replaced since (a doctor repair) starts again from nothing: its
	// records may be told once more, never lost.
	Mark = storage.Mark
	// Problem is one thing doctor found, located as Path:Line (Line 0: the
	// whole file). Repaired says --repair fixed it; Repairable that
	// --repair would (or tried to).
	Problem = storage.Problem
	// Record is one complete line of a JSONL file.
	Record = storage.Record
	// Seen is when a message was first surfaced to the agent's sessions and
	// first read (zero: not yet), and how it was surfaced.
	Seen = storage.Seen
)

// Session purposes (DESIGN section 5).
const (
	PurposeTask = storage.PurposeTask
	PurposeChat = storage.PurposeChat
)

// Agent types and roles (config.toml's [[agents]] type and role).
const (
	AgentAI     = storage.AgentAI
	AgentHuman  = storage.AgentHuman
	RoleWorker  = storage.RoleWorker
	RoleManager = storage.RoleManager
)

// The durabilities of config.toml's [defaults] durability.
const (
	DurableFsync = storage.DurableFsync
	DurableNone  = storage.DurableNone
)

// The collections under .ai-pm/: one directory each, one document per entity.
const (
	Conversations = storage.Conversations
	Delegations   = storage.Delegations
	Tasks         = storage.Tasks
	Sessions      = storage.Sessions
	Pending       = storage.Pending
	Runs          = storage.Runs
)

// The prefixes of aipm's time-sortable ids (NewID, CheckID).
const (
	PrefixMessage      = storage.PrefixMessage
	PrefixTask         = storage.PrefixTask
	PrefixNotification = storage.PrefixNotification
	PrefixSession      = storage.PrefixSession
	PrefixRun          = storage.PrefixRun
)

// The streams of an agent's read.json: its chat log, and its notifications
// (one cursor per session purpose: NotificationStream).
const (
	StreamChat          = storage.StreamChat
	StreamNotifications = storage.StreamNotifications
)

// Notification types.
const (
	NotifyInterrupt = storage.NotifyInterrupt
	NotifyInfo      = storage.NotifyInfo
)

// The modes of what aipm creates under .ai-pm/, the same under any umask:
// private ones hold sessions and credentials.
const (
	ModeFile        = storage.ModeFile
	ModeDir         = storage.ModeDir
	ModePrivateFile = storage.ModePrivateFile
	ModePrivateDir  = storage.ModePrivateDir
)

// Limits on free-text fields, in characters, checked before anything is
// written (DESIGN section 14; CheckText, TextLimits).
const (
	MaxContent     = storage.MaxContent     // a chat message
	MaxTitle       = storage.MaxTitle       // a task's title
	MaxDescription = storage.MaxDescription // a task's description
	MaxPurpose     = storage.MaxPurpose     // what a conversation or delegation is for
	MaxContext     = storage.MaxContext     // background handed to another session
	MaxResult      = storage.MaxResult      // a delegation's result
)

// MaxWait is the longest get_next_action waits, in seconds: Codex CLI
// abandons a tool call after 60 s.
const MaxWait = storage.MaxWait

// DirName is the name of the state directory inside a project.
const DirName = storage.DirName

// SystemSender is the reserved sender id of messages the system writes.
const SystemSender = storage.SystemSender

// Error codes a caller branches on (CodeError.Code); the seeds' codes.
const (
	CodeAgentNotFound           = storage.CodeAgentNotFound
	CodeContentEmpty            = storage.CodeContentEmpty
	CodeDiskFull                = storage.CodeDiskFull
	CodeReasonRequired          = storage.CodeReasonRequired
	CodeSentPartly              = storage.CodeSentPartly
	CodeTargetAgentNotInProject = storage.CodeTargetAgentNotInProject
)

var (
	// ErrAmbiguous says a prefix matches more than one id (or a choice has more
	// than one candidate).
	ErrAmbiguous = storage.ErrAmbiguous
	// ErrBackoff says authenticate refused to check a passkey because of
	// earlier failures; the error it wraps says until when.
	ErrBackoff = storage.ErrBackoff
	// ErrBadPasskey says a passkey does not match.
	ErrBadPasskey = storage.ErrBadPasskey
	// ErrExists says something that must be new already exists.
	ErrExists = storage.ErrExists
	// ErrInvalid says a value has the wrong form.
	ErrInvalid = storage.ErrInvalid
	// ErrNetworkFilesystem says .ai-pm/ (or the directory aipm init would put
	// it in) is on a network filesystem, where aipm's rules cannot hold: flock
	// is emulated there or only local to one client, O_APPEND is simulated by
	// the client (two hosts' appends can overwrite each other), and inotify sees
	// only this machine's writes, so the watcher and every waiting
	// get_next_action go deaf to the other hosts. The CLI exits 1 on it.
	ErrNetworkFilesystem = storage.ErrNetworkFilesystem
	// ErrNoProject says that no directory from the working directory upwards
	// holds .ai-pm/ (LocateProject given neither --dir nor AIPM_DIR).
	ErrNoProject = storage.ErrNoProject
	// ErrNotFound says a document or agent does not exist; callers branch on it
	// with errors.Is.
	ErrNotFound = storage.ErrNotFound
	// ErrWatcherRunning says another watcher holds the project.
	ErrWatcherRunning = storage.ErrWatcherRunning
	// TextLimits maps each free-text field to its limit, for documentation and
	// for the one check below.
	TextLimits = storage.TextLimits
)

// Adopt is the one rule of replacing the config in force (old; nil: none
// yet) by one just re-read (next): a config with no agents never replaces
// one with agents, since every agent's messages, sends and triggers would
// stop at once; that is a save in progress or a mistake, and the error says
// so.
func Adopt(old *Config, next *Config) error { return storage.Adopt(old, next) }

// BackoffAfter is the wait after the given number of failed attempts in a
// row: nothing for the first few, then doubling up to a cap. It is the one
// schedule of every credential check (authenticate here; wrong HTTP
// bearer tokens per client address in mcpserver).
func BackoffAfter(failures int) time.Duration { return storage.BackoffAfter(failures) }

// CheckAgentID reports whether id may name an agent (and so a directory).
func CheckAgentID(id string) error { return storage.CheckAgentID(id) }

// CheckID reports whether id is a well-formed id with the given prefix.
func CheckID(prefix string, id string) error { return storage.CheckID(prefix, id) }

// CheckText is the one check of a free-text field: valid UTF-8 and at
// most its limit. The codes are the seeds' (content_too_long) generalised:
// <field>_too_long, and content_invalid for bytes that are not UTF-8.
func CheckText(field string, value string) error { return storage.CheckText(field, value) }

// Nearest is the known word (a config key, a command's flag) nearest to
// word, if it is near enough to be what was meant; "" if none is: the one
// rule of "did you mean".
func Nearest(word string, known []string) string { return storage.Nearest(word, known) }

// Clip returns s if it has at most n bytes, else its first n bytes (whole
// characters) and how long it was: an error repeats what it was given, but
// never a huge value whole.
func Clip(s string, n int) string { return storage.Clip(s, n) }

// EncodeDoc renders v the way every JSON document is stored
// (lockedfile.EncodeDoc).
func EncodeDoc(v any) ([]byte, error) { return storage.EncodeDoc(v) }

// FindProject returns the project directory the way git finds a repository:
// start, then each parent, until one holds a .ai-pm directory.
func FindProject(start string) (string, error) { return storage.FindProject(start) }

// IsDiskFull reports whether err is a write refused for lack of space: a
// full disk, a quota, or a file size limit (RLIMIT_FSIZE).
func IsDiskFull(err error) bool { return storage.IsDiskFull(err) }

// LocateProject is the one rule of where a command's project is, as git
// finds its repository: dir (--dir), else envDir ($AIPM_DIR), both as
// given, else the nearest directory upwards from the working directory
// that holds .ai-pm/ (FindProject).
func LocateProject(dir string, envDir string) (string, error) {
	return storage.LocateProject(dir, envDir)
}

// NewID returns a new time-sortable id with the given prefix.
func NewID(prefix string) string { return storage.NewID(prefix) }

// NewWarnings are the warnings of next that old (the config in force
// before it; nil: none) did not have: an unknown key is said once when a
// config is first read, and again only when a reload brings a new one.
func NewWarnings(old *Config, next *Config) []error { return storage.NewWarnings(old, next) }

// NotificationStream is the notifications cursor of a session purpose.
func NotificationStream(purpose string) string { return storage.NotificationStream(purpose) }

// ReadAll returns every valid complete line of path, the invalid lines as
// errors, and the size of a torn tail. A missing file reads as empty.
func ReadAll(path string) ([]Record, []*LineError, int64, error) { return storage.ReadAll(path) }

// TOMLSyntax is the line of a TOML syntax error and what the parser
// expected there (a short phrase such as "expected value but found '\n'
// instead"); ok is false for an error that is not one (a decoded value of
// the wrong type: the caller says what it expected).
func TOMLSyntax(err error) (int, string, bool) { return storage.TOMLSyntax(err) }
