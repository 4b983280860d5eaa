package fsstore

import (
	"aipm/fsstore/internal/storage"
	"aipm/internal/lockedfile"
	"sync/atomic"
)

// Store is one project's .ai-pm/ directory with its rules: the storage
// (Files: the layout, the documents and logs, the config) and what this
// process keeps of the entities between calls (revalidated by stat). It is
// safe for concurrent use by many goroutines and processes.
type Store struct {
	files  *storage.Files
	caches *caches
	// leaseSteps counts the steps of every lease comparison this store
	// made (leaseMatcher): tests bound what a take, a check or a listing
	// costs by it.
	leaseSteps atomic.Int64
}

// caches holds what this process keeps between calls: what it read from
// files (revalidated by stat) and the descriptors it appends through.
type caches struct {
	sessions lockedfile.StatCache[Session]
	// sessionIndex: each agent's session ids (agentSessionIDs).
	sessionIndex lockedfile.StatCache[[]string]
	// unread: the sessions' counts (Interrupt), by session and mark.
	unread lockedfile.StatCache[Unread]
	// quietChat: chat sessions found with no new message (NewMessagesFor).
	quietChat lockedfile.StatCache[struct{}]
	// convIndex: the conversations' index (keptConvIndex).
	convIndex lockedfile.StatCache[convIndex]
	// told: the descriptors of the sessions' told records (Surface).
	told    lockedfile.HeldRecords
	tasks   taskIndex
	bearers bearerCache // HTTP bearer tokens found to be agents' passkeys (AgentOfPasskey)
	leaseFS leaseFS     // the project's file system as leases compare names (lease_path.go)
	// passkeys: the AI agents' stored passkey hashes (AgentOfPasskey).
	passkeys lockedfile.StatCache[storedHash]
}

// Open returns the store of the project directory dir, which must contain
// .ai-pm/ on a local filesystem (a network filesystem is refused:
// ErrNetworkFilesystem). Appends fsync until a loaded config says
// durability = "none".
func Open(projectDir string) (*Store, error) {
	return openStore(projectDir, true)
}

// OpenToCheck opens the store as Open does, on any filesystem: for aipm
// doctor, which reports a network filesystem as a problem (Doctor) instead
// of refusing to look.
func OpenToCheck(projectDir string) (*Store, error) {
	return openStore(projectDir, false)
}

func openStore(projectDir string, refuseNetwork bool) (*Store, error) {
	files, err := storage.OpenFiles(projectDir, refuseNetwork)
	if err != nil {
		return nil, err
	}
	return &Store{files: files, caches: &caches{}}, nil
}
