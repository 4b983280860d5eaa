package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"aipm/internal/lockedfile"
)

// LockDir takes dir/.lock, the lock of the collection of documents in dir
// (DESIGN section 4, rule 3), and returns the function that releases it.
// The lock file is never removed (removing it would let two lockers hold
// locks on different inodes).
func (s *Files) LockDir(ctx context.Context, dir string) (unlock func(), err error) {
	if err := s.MkdirAll(dir); err != nil {
		return nil, s.Failed("lock", dir, err)
	}
	unlock, err = lockedfile.Lock(ctx, filepath.Join(dir, ".lock"), ModePrivateFile)
	if err != nil {
		return nil, s.Failed("lock", dir, err)
	}
	return unlock, nil
}

// MkdirAll creates dir and its missing parents with the layout's modes.
func (s *Files) MkdirAll(dir string) error {
	if err := lockedfile.CheckDir(dir); err != nil {
		return err
	}
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := s.MkdirAll(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, s.dirMode(dir)); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if s.Durable.Load() {
		return SyncDir(parent)
	}
	return nil
}

// WriteDoc replaces path with v atomically (DESIGN section 4, rule 3). The
// caller holds the collection's lock when the write depends on a read.
func (s *Files) WriteDoc(path string, v any, perm os.FileMode) error {
	data, err := lockedfile.EncodeDoc(v)
	if err != nil {
		return s.Failed("write", path, fmt.Errorf("encode: %w", err))
	}
	if err := s.MkdirAll(filepath.Dir(path)); err != nil {
		return s.Failed("write", path, err)
	}
	if err := WriteFileAtomic(path, data, perm, s.Durable.Load()); err != nil {
		return s.Failed("write", path, err)
	}
	return nil
}

// ReadDoc decodes the JSON document at path into v. A missing file is
// ErrNotFound; invalid JSON is a *LineError naming the line.
func (s *Files) ReadDoc(path string, v any) error {
	data, err := lockedfile.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read %s: %w", s.Rel(path), ErrNotFound)
	}
	if err != nil {
		return s.Failed("read", path, err)
	}
	return DecodeDoc(s.Rel(path), data, v)
}

// DecodeDoc decodes the JSON document data, read from path, into v, and
// has v judge what a person wrote into it if it can (its Settle method);
// invalid JSON is a *LineError naming the line.
func DecodeDoc(path string, data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return &LineError{Path: path, Line: lockedfile.JSONLine(data, err), Err: errors.New(lockedfile.JSONWords(data, err))}
	}
	if d, ok := v.(settler); ok {
		d.Settle()
	}
	return nil
}

// A settler is a document that judges what a person wrote into it once it
// is decoded, wherever it is read (a task's status edited by hand: the rule
// is the task's, Task.Settle).
type settler interface{ Settle() }

// casAttempts bounds how often UpdateDoc re-reads and re-applies a change
// to a document that someone kept rewriting under it.
const casAttempts = 8

// UpdateDoc is the read-modify-write of DESIGN section 4 rules 3 and 8: it
// holds the collection lock of path's directory, reads the document (and
// its identity) into a fresh T (exists says whether there was one), calls
// fn, and writes the result if fn returns nil, compare-and-swap: just before
// the rename it checks that the path still holds what was read, and if a
// lock-less writer (a human's editor) replaced it meanwhile, it reads again
// and re-applies fn, so neither change is lost silently; after casAttempts
// it refuses. Keys of the document that T does not know are kept.
// Returning ErrNoChange from fn skips the write.
func UpdateDoc[T any](ctx context.Context, s *Files, path string, perm os.FileMode, fn func(doc *T, exists bool) error) (T, error) {
	unlock, err := s.LockDir(ctx, filepath.Dir(path))
	if err != nil {
		var doc T
		return doc, err
	}
	defer unlock()
	return UpdateDocHeld(ctx, s, path, perm, fn)
}

// UpdateDocHeld is UpdateDoc for a caller that holds the directory's lock
// already (compaction, which holds it across a log's replacement).
func UpdateDocHeld[T any](ctx context.Context, s *Files, path string, perm os.FileMode, fn func(doc *T, exists bool) error) (T, error) {
	var doc T
	var editErr error // an error of the edit itself, returned as it is
	edits := 0
	races, err := lockedfile.Update(ctx, path, perm, s.Durable.Load(), casAttempts, func(data []byte, exists bool) ([]byte, error) {
		edits++
		doc = *new(T)
		if exists {
			if editErr = DecodeDoc(s.Rel(path), data, &doc); editErr != nil {
				return nil, editErr
			}
		}
		if editErr = fn(&doc, exists); editErr != nil {
			return nil, editErr
		}
		out, err := lockedfile.EncodeKeeping(&doc, data)
		if err != nil {
			editErr = s.Failed("write", path, fmt.Errorf("encode: %w", err))
			return nil, editErr
		}
		if err := s.MkdirAll(filepath.Dir(path)); err != nil {
			editErr = s.Failed("write", path, err)
			return nil, editErr
		}
		if s.seams.beforeWrite != nil {
			s.seams.beforeWrite(path)
		}
		return out, nil
	})
	switch {
	case err == nil:
	case errors.Is(err, ErrNoChange) && err == editErr:
		return doc, nil
	case err == editErr:
		return doc, err
	case errors.Is(err, lockedfile.ErrChanged):
		return doc, fmt.Errorf("write %s: it was changed by someone else %d times while aipm updated it (an editor saving it?); nothing was written: try again once it is saved", s.Rel(path), races)
	case edits == 0:
		return doc, s.Failed("read", path, err)
	default:
		return doc, s.Failed("write", path, err)
	}
	return doc, nil
}

// WriteFileAtomic writes data to a temp file beside path, syncs it, renames
// it over path and syncs the directory so the new name is durable.
func WriteFileAtomic(path string, data []byte, perm os.FileMode, durable bool) error {
	return lockedfile.WriteAtomic(path, data, perm, durable, nil)
}

// SyncDir makes the entries of dir durable (lockedfile.SyncDir).
func SyncDir(dir string) error { return lockedfile.SyncDir(dir) }

// EachDoc is the one listing of a collection: fn gets the path and the
// decoded document of every readable document of collection, in name
// order (for id documents, creation order). Names that are not the
// collection's (a temp file, an editor's backup) are passed over, and a
// damaged document is skipped (doctor reports it). A missing directory
// holds none.
func EachDoc[T any](s *Files, collection string, fn func(path string, doc T) error) error {
	dir := s.CollectionDir(collection)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", collection, err)
	}
	for _, e := range entries {
		if !isDocName(collection, e.Name()) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		var doc T
		if err := s.ReadDoc(path, &doc); err != nil {
			continue
		}
		if err := fn(path, doc); err != nil {
			return err
		}
	}
	return nil
}

// isDocName says whether name is one of collection's document names:
// <id>.json with the collection's id prefix, or <agent>.<purpose>.json in
// pending/ and runs/.
func isDocName(collection, name string) bool {
	base, ok := strings.CutSuffix(name, ".json")
	if !ok || strings.HasPrefix(name, ".") {
		return false
	}
	if prefix, ok := IDPrefixOf[collection]; ok {
		return CheckID(prefix, base) == nil
	}
	return true
}

// EncodeDoc renders v the way every JSON document is stored
// (lockedfile.EncodeDoc).
func EncodeDoc(v any) ([]byte, error) { return lockedfile.EncodeDoc(v) }
