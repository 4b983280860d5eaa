package fsstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/BurntSushi/toml"

	"aipm/fsstore/internal/storage"
	"aipm/internal/lockedfile"
)

// gitignore keeps runtime state out of git; chat logs, tasks, conversations
// and delegations stay versionable.
const gitignore = `# Runtime state written by aipm; keep it out of git.
sessions/
leases/
pending/
runs/
logs/
credentials/
quarantine/
agents/*/read.json
agents/*/passkey.json
agents/*/auth.json
agents/*/receipts.jsonl
local.json
local.lock
.lock
watcher.lock
watcher.json
compact.lock
.*.tmp-*
`

// Init creates .ai-pm/ in projectDir with a config and a .gitignore. It
// refuses to touch an existing project.
func Init(projectDir, name string) (*Store, error) {
	abs, err := filepath.Abs(projectDir)
	if err != nil {
		return nil, fmt.Errorf("init %s: %w", projectDir, err)
	}
	if name == "" {
		name = filepath.Base(abs)
	}
	root := filepath.Join(abs, storage.DirName)
	if _, err := os.Lstat(root); err == nil {
		return nil, storage.Kindf(storage.ErrExists, "%s already exists: this is an aipm project already (use aipm doctor to check it)", storage.DirName)
	}
	if err := storage.CheckLocalProject(abs); err != nil {
		return nil, err
	}
	// Build the new tree beside, then rename it into place, so a failed or
	// concurrent init never leaves half a project.
	tmp, err := os.MkdirTemp(abs, "."+storage.DirName+".init-*")
	if err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, storage.ModeDir); err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	var cfg bytes.Buffer
	fmt.Fprintf(&cfg, "# aipm project configuration; aipm config example prints every key.\n\n")
	fmt.Fprintf(&cfg, "[project]\n")
	if err := toml.NewEncoder(&cfg).Encode(storage.ProjectConfig{Name: name, ID: storage.NewID("prj_")}); err != nil {
		return nil, fmt.Errorf("init: encode config: %w", err)
	}
	fmt.Fprintf(&cfg, "\n[defaults]\ndurability = %q\n\n# Agents: add them with `aipm agent add ID --type ai|human`, or edit here.\n", storage.DurableFsync)
	if _, err := storage.ParseConfig("config.toml", cfg.Bytes()); err != nil {
		return nil, fmt.Errorf("init: generated config is invalid (a bug): %w", err)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{"config.toml", cfg.Bytes()}, {".gitignore", []byte(gitignore)}} {
		if err := storage.WriteFileAtomic(filepath.Join(tmp, f.name), f.data, storage.ModeFile, true); err != nil {
			return nil, fmt.Errorf("init: %w", err)
		}
	}
	if err := os.Mkdir(filepath.Join(tmp, "agents"), storage.ModeDir); err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	// This checkout's marker: nothing sent from now on is history of a clone.
	if err := storage.WriteInitMarker(tmp); err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	// Rename fails if root appeared meanwhile (it is then a non-empty directory).
	if err := os.Rename(tmp, root); err != nil {
		if _, serr := os.Lstat(root); serr == nil {
			return nil, storage.Kindf(storage.ErrExists, "%s already exists: this is an aipm project already", storage.DirName)
		}
		return nil, fmt.Errorf("init: %w", err)
	}
	if err := storage.SyncDir(abs); err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	return Open(abs)
}

// NewAgent is what `aipm agent add` appends to config.toml.
type NewAgent struct {
	ID     string `toml:"id"`
	Name   string `toml:"name,omitempty"`
	Type   string `toml:"type"`
	Role   string `toml:"role,omitempty"`
	Parent string `toml:"parent,omitempty"`
	// Command is what aipm watch starts when the agent has work (argv).
	Command []string `toml:"command,omitempty"`
}

// configRaces is how many times someone else may save config.toml between
// EditConfig's read and its write before it gives up.
const configRaces = 6

// EditConfig is the one writer of config.toml. Under the project's lock it
// reads the file, passes its text and parsed config to edit, checks that
// the result is a valid config, and replaces the file compare-and-swap
// (rule 8): if a human saved it in between (an editor takes no lock), edit
// runs again on what they saved, and after configRaces such races it
// refuses, so that neither change is lost silently. The edit works on
// text: comments and layout survive. A config that is invalid before the
// edit is refused.
func (s *Store) EditConfig(ctx context.Context, edit func(text []byte, cfg *storage.Config) ([]byte, error)) error {
	unlock, err := s.files.LockDir(ctx, s.files.Root())
	if err != nil {
		return err
	}
	defer unlock()
	path := s.files.ConfigPath()
	var editErr error
	races, err := lockedfile.Update(ctx, path, storage.ModeFile, s.files.Durable.Load(), configRaces, func(old []byte, exists bool) ([]byte, error) {
		updated, err := editConfigText(s.files.Rel(path), old, exists, edit)
		editErr = err
		return updated, err
	})
	switch {
	case err == nil || err == editErr:
		return err
	case errors.Is(err, lockedfile.ErrChanged):
		return fmt.Errorf("%s was saved by someone else %d times while aipm was changing it; nothing was changed: run the command again", s.files.Rel(path), races)
	}
	return fmt.Errorf("write config: %w", err)
}

// editConfigText is one pass of EditConfig over the text read.
func editConfigText(name string, old []byte, exists bool, edit func(text []byte, cfg *storage.Config) ([]byte, error)) ([]byte, error) {
	if !exists {
		return nil, storage.Kindf(storage.ErrNotFound, "%s is missing: run aipm init, or restore it", name)
	}
	cfg, err := storage.ParseConfig(name, old)
	if err != nil {
		return nil, fmt.Errorf("the config is invalid, fix it first: %w", err)
	}
	updated, err := edit(old, cfg)
	if err != nil {
		return nil, err
	}
	if updated == nil {
		return nil, nil // nothing to write
	}
	if _, err := storage.ParseConfig(name, updated); err != nil {
		return nil, storage.Kindf(storage.ErrInvalid, "the change would leave an invalid config: %v", err)
	}
	return updated, nil
}

// AddAgent appends an [[agents]] entry to config.toml as text (the human's
// comments and layout survive) through EditConfig and, for an AI agent,
// stores a salted hash of a new passkey and returns the passkey, which is
// shown once and stored nowhere. A human gets none ("").
func (s *Store) AddAgent(ctx context.Context, a NewAgent) (passkey string, err error) {
	if err := storage.CheckAgentID(a.ID); err != nil {
		return "", err
	}
	var entry bytes.Buffer
	entry.WriteString("\n[[agents]]\n")
	if err := toml.NewEncoder(&entry).Encode(a); err != nil {
		return "", fmt.Errorf("encode agent: %w", err)
	}
	exists := func(cfg *storage.Config) error {
		if _, ok := cfg.Agent(a.ID); ok {
			return storage.Kindf(storage.ErrExists, "agent %q already exists in %s: choose another id", a.ID, s.files.Rel(s.files.ConfigPath()))
		}
		return nil
	}
	if cfg, err := s.files.LoadConfig(); err == nil { // before a passkey of that id is touched
		if err := exists(cfg); err != nil {
			return "", err
		}
	}
	// The passkey hash is stored first, so that the agent never appears in
	// the config without one; it goes again if the agent is not added.
	if a.Type == storage.AgentAI { // humans act through the CLI and need no passkey
		if passkey, err = s.newPasskey(a.ID); err != nil {
			return "", err
		}
	}
	err = s.EditConfig(ctx, func(old []byte, cfg *storage.Config) ([]byte, error) {
		if err := exists(cfg); err != nil {
			return nil, err
		}
		updated := append([]byte{}, old...)
		if len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
			updated = append(updated, '\n')
		}
		updated = append(updated, entry.Bytes()...)
		if _, err := storage.ParseConfig(s.files.Rel(s.files.ConfigPath()), updated); err != nil {
			// The line would be one of the new entry, which is not in the
			// file: say what is wrong without pointing into it.
			var le *storage.LineError
			if errors.As(err, &le) {
				err = le.Err
			}
			return nil, storage.Kindf(storage.ErrInvalid, "agent %q cannot be added: %v", a.ID, err)
		}
		return updated, nil
	})
	if err != nil {
		if path, perr := s.files.PasskeyPath(a.ID); perr == nil && passkey != "" {
			os.Remove(path)
		}
		return "", err
	}
	return passkey, nil
}

// passkeyRecord is agents/<id>/passkey.json: a salted SHA-256 of a 256-bit
// random passkey. (A slow hash buys nothing against a key this long.)
type passkeyRecord struct {
	Algorithm string    `json:"algorithm"`
	Salt      string    `json:"salt"`
	Hash      string    `json:"hash"`
	CreatedAt time.Time `json:"createdAt"`
}

const passkeyPrefix = "aipk_"

func (s *Store) newPasskey(agent string) (string, error) {
	path, err := s.files.PasskeyPath(agent)
	if err != nil {
		return "", err
	}
	var key, salt [32]byte
	if _, err := rand.Read(key[:]); err != nil {
		return "", err
	}
	if _, err := rand.Read(salt[:16]); err != nil {
		return "", err
	}
	passkey := passkeyPrefix + base64.RawURLEncoding.EncodeToString(key[:])
	rec := passkeyRecord{
		Algorithm: "sha256",
		Salt:      hex.EncodeToString(salt[:16]),
		Hash:      hashPasskey(salt[:16], passkey),
		CreatedAt: time.Now().UTC(),
	}
	if err := s.files.WriteDoc(path, rec, storage.ModePrivateFile); err != nil {
		return "", err
	}
	return passkey, nil
}

func hashPasskey(salt []byte, passkey string) string {
	h := sha256.New()
	h.Write(salt)
	h.Write([]byte(passkey))
	return hex.EncodeToString(h.Sum(nil))
}

// checkPasskey compares passkey with the agent's stored hash in constant time.
func (s *Store) checkPasskey(agent, passkey string) error {
	h, err := s.passkeyHash(agent)
	if err != nil {
		return err
	}
	if err := storage.CheckPasskeyArg(passkey); err != nil {
		return err
	}
	if !h.matches(passkey) {
		return storage.ErrBadPasskey
	}
	return nil
}

// storedHash is what passkey.json keeps of a passkey: its salt and the
// salted hash.
type storedHash struct {
	salt []byte
	hash string
}

// matches compares passkey, exactly as given (no trimming), with h in
// constant time.
func (h storedHash) matches(passkey string) bool {
	return subtle.ConstantTimeCompare([]byte(hashPasskey(h.salt, passkey)), []byte(h.hash)) == 1
}

// passkeyHash reads agent's passkey.json: ErrBadPasskey, saying what to
// do, when it has none or it is damaged.
func (s *Store) passkeyHash(agent string) (storedHash, error) {
	path, err := s.files.PasskeyPath(agent)
	if err != nil {
		return storedHash{}, err
	}
	var rec passkeyRecord
	if err := s.files.ReadDoc(path, &rec); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return storedHash{}, storage.Kindf(storage.ErrBadPasskey, "agent %q has no passkey (a clone of the project, or an agent added by hand): run aipm agent passkey %s", agent, agent)
		}
		return storedHash{}, err
	}
	salt, err := hex.DecodeString(rec.Salt)
	if err != nil || rec.Algorithm != "sha256" {
		return storedHash{}, storage.Kindf(storage.ErrBadPasskey, "%s is damaged: run aipm agent passkey %s to issue a new passkey", s.files.Rel(path), agent)
	}
	return storedHash{salt: salt, hash: rec.Hash}, nil
}

// VerifyPasskey checks agent's passkey without the per-agent slowing of
// authenticate (a client hook proves who it runs for on every tool call;
// it opens no session and reveals nothing a reader of .ai-pm/ cannot read).
func (s *Store) VerifyPasskey(agent, passkey string) error { return s.checkPasskey(agent, passkey) }
