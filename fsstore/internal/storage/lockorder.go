package storage

import (
	"path"
	"path/filepath"
	"slices"
	"strings"

	"aipm/internal/lockedfile"
)

// The lock order: the rank of every lock aipm takes under .ai-pm, outermost
// first. A lock may be waited for only while every lock held ranks lower,
// so no cycle of waits can form, within a process or between processes; two
// locks of one rank never nest. A lock taken without waiting (TryLock) may
// be taken while anything is held. This table is the one statement of the
// order: built with the tag lockrank (go test -tags lockrank, as the README
// runs the tests), lockedfile checks every acquisition against it and
// reports a wait out of order, or a lock it does not rank, with both locks
// and the stack.
//
// In-process mutexes nest with these only as leaves (none is held while a
// file lock is waited for), but for an Appender's: it is held while its
// file's flock is waited for, and counts as that log's lock.
const (
	rankNone = iota
	// The watcher lock: .ai-pm itself (TryLockDir) and watcher.lock, taken
	// without waiting and held for the watcher's life: all it does nests
	// inside.
	rankWatcher
	// A run's slot, runs/.<agent>.<purpose>.lock: taken without waiting
	// (TryLockFile), held by the process started for the run; Claim waits
	// for runs/.lock and the run's document inside it.
	rankRunSlot
	// A session's wake lock, sessions/.<id>.wake: taken without waiting
	// (TryLockFile) by a client's idle-wake hook, held while it waits.
	rankWake
	// local.lock: Open settles a checkout without its marker (a clone)
	// inside it, an agent's lock and read.json at a time (checkout.go).
	rankLocal
	// compact.lock: one compaction at a time; an agent's lock, that
	// agent's logs and documents inside it (compact.go), and doctor's
	// restored copies (appends).
	rankCompact
	// The project lock, .ai-pm/.lock: config.toml's read-modify-write
	// (EditConfig) and a passkey's issue.
	rankProject
	// An agent's lock, agents/<agent>/.lock: its read.json, markers.json,
	// compacted.json and auth.json, and what is done under them: a marked
	// operation (WithMarker: a task's collection lock and document,
	// appends), a compaction of its logs (a log's lock, then
	// compacted.json's), a check of a passkey (GuardCredential).
	rankAgent
	// A collection's lock, <collection>/.lock (conversations, tasks,
	// delegations, sessions, pending, runs): the read-check-write of its
	// documents (DESIGN section 4, rule 3), and leases/.lock, the
	// read-check-write of leases.json. None is taken inside another;
	// a conversation turn appends to chat logs inside conversations/.lock
	// (the turn is checked, written and counted at once: groupTurn,
	// twoPartyTurn).
	rankCollection
	// A log's own lock, agents/<agent>/*.jsonl (any *.jsonl under .ai-pm):
	// an append, doctor's read and repair, a compaction, whose record of
	// what it drops (compacted.json) is written inside it.
	rankLog
	// A session's told record, sessions/.<id>.told (SwapRecord,
	// ReadRecord): nothing is locked inside it.
	rankTold
	// A document's own lock (Update: the lock an editor can take too):
	// <collection>/<id>.json, <collection>/<agent>.<purpose>.json,
	// agents/<agent>/*.json, config.toml. Held for the document's own
	// read-modify-write only: nothing is locked inside it.
	rankDocument
	rankCount
)

// lockOrder names each rank, as a report of the checker names it.
var lockOrder = [rankCount]string{
	rankWatcher:    "the watcher lock (.ai-pm itself, watcher.lock)",
	rankRunSlot:    "a run's slot lock (runs/.<agent>.<purpose>.lock)",
	rankWake:       "a session's wake lock (sessions/.<id>.wake)",
	rankLocal:      "local.lock",
	rankCompact:    "compact.lock",
	rankProject:    "the project lock (.ai-pm/.lock)",
	rankAgent:      "an agent's lock (agents/<agent>/.lock)",
	rankCollection: "a collection's lock (<collection>/.lock)",
	rankLog:        "a log's own lock (*.jsonl)",
	rankTold:       "a session's told record (sessions/.<id>.told)",
	rankDocument:   "a document's own lock (*.json, config.toml)",
}

// lockRank is the rank of the lock at path (registered with
// lockedfile.RankLocks by Open): its place in the layout, or no rank.
func (l layout) lockRank(path string) lockedfile.Rank {
	rel, err := filepath.Rel(l.root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return lockedfile.Rank{}
	}
	r := lockClass(filepath.ToSlash(rel))
	if r == rankNone {
		return lockedfile.Rank{}
	}
	return lockedfile.Rank{Order: r, Name: lockOrder[r]}
}

// lockPlaces says which lock ranks where, as a table of rows like
// lockOrder's: the first row that holds a path gives its rank, and a path
// no row holds has none (a lock aipm never takes).
var lockPlaces = []lockPlace{
	{in: topDir, name: ".", rank: rankWatcher}, // .ai-pm itself
	{in: topDir, name: "watcher.lock", rank: rankWatcher},
	{in: topDir, name: "local.lock", rank: rankLocal},
	{in: topDir, name: "compact.lock", rank: rankCompact},
	{in: topDir, name: ".lock", rank: rankProject},
	{in: topDir, name: "config.toml", rank: rankDocument},
	{in: anyDir, suffix: ".jsonl", rank: rankLog},
	{in: agentDirs, name: ".lock", rank: rankAgent},
	{in: agentDirs, suffix: ".json", rank: rankDocument},
	{in: collectionDirs, name: ".lock", rank: rankCollection},
	{in: []string{Runs}, hidden: true, suffix: ".lock", rank: rankRunSlot},
	{in: []string{Sessions}, hidden: true, suffix: ".wake", rank: rankWake},
	{in: []string{Sessions}, hidden: true, suffix: ".told", rank: rankTold},
	{in: collectionDirs, suffix: ".json", rank: rankDocument},
}

// The directories a lockPlace is in, as path.Match patterns of the path
// relative to .ai-pm, slash-separated.
var (
	anyDir         []string // nil: any directory
	topDir         = []string{""}
	agentDirs      = []string{"agents/?*"}
	collectionDirs = []string{Conversations, Tasks, Delegations, Sessions, Pending, Runs, Runs + "/" + outcomesDir, leasesDir}
)

// A lockPlace is a row of lockPlaces: the locks in one of the directories
// in whose name is name, or, when name is "", whose name begins with a
// dot or not as hidden says and ends in suffix.
type lockPlace struct {
	in     []string
	name   string
	hidden bool
	suffix string
	rank   int
}

// holds says whether the lock name in dir is one of p's.
func (p lockPlace) holds(dir, name string) bool {
	inDir := func(pattern string) bool { ok, _ := path.Match(pattern, dir); return ok }
	if p.in != nil && !slices.ContainsFunc(p.in, inDir) {
		return false
	}
	if p.name != "" {
		return name == p.name
	}
	return strings.HasPrefix(name, ".") == p.hidden && strings.HasSuffix(name, p.suffix)
}

// lockClass is the rank of the lock at rel, a slash-separated path
// relative to .ai-pm: the first of lockPlaces that holds it.
func lockClass(rel string) int {
	dir, name := pathSplit(rel)
	for _, p := range lockPlaces {
		if p.holds(dir, name) {
			return p.rank
		}
	}
	return rankNone
}

// pathSplit splits a slash-separated path at its last slash ("" and the
// path for one without).
func pathSplit(rel string) (dir, name string) {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return "", rel
	}
	return rel[:i], rel[i+1:]
}
