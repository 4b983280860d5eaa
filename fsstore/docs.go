package fsstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"aipm/fsstore/lockedfile"
)

// LockDir takes dir/.lock, the lock of the collection of documents in dir
// (DESIGN section 4, rule 3), and returns the function that releases it.
// The lock file is never removed (removing it would let two lockers hold
// locks on different inodes).
func (s *Store) LockDir(ctx context.Context, dir string) (unlock func(), err error) {
	if err := s.mkdirAll(dir); err != nil {
		return nil, fmt.Errorf("lock %s: %w", s.Rel(dir), err)
	}
	unlock, err = lockedfile.Lock(ctx, filepath.Join(dir, ".lock"), ModePrivateFile)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", s.Rel(dir), err)
	}
	return unlock, nil
}

// mkdirAll creates dir and its missing parents with the layout's modes.
func (s *Store) mkdirAll(dir string) error {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := s.mkdirAll(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, s.dirMode(dir)); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if s.durable {
		return syncDir(parent)
	}
	return nil
}

// EncodeDoc renders v the way every JSON document is stored: indented two
// spaces, keys in struct order (maps sorted), a final newline, no HTML
// escaping. Stable output keeps editors and git diff clean.
func EncodeDoc(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteDoc replaces path with v atomically (DESIGN section 4, rule 3). The
// caller holds the collection's lock when the write depends on a read.
func (s *Store) WriteDoc(path string, v any, perm os.FileMode) error {
	data, err := EncodeDoc(v)
	if err != nil {
		return fmt.Errorf("write %s: encode: %w", s.Rel(path), err)
	}
	if err := s.mkdirAll(filepath.Dir(path)); err != nil {
		return fmt.Errorf("write %s: %w", s.Rel(path), err)
	}
	if err := writeFileAtomic(path, data, perm, s.durable); err != nil {
		return fmt.Errorf("write %s: %w", s.Rel(path), err)
	}
	return nil
}

// ReadDoc decodes the JSON document at path into v. A missing file is
// ErrNotFound; invalid JSON is a *LineError naming the line.
func (s *Store) ReadDoc(path string, v any) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read %s: %w", s.Rel(path), ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", s.Rel(path), err)
	}
	return decodeDoc(s.Rel(path), data, v)
}

func decodeDoc(path string, data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		line := 1
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			line = 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		case errors.As(err, &te):
			line = 1 + bytes.Count(data[:min(int(te.Offset), len(data))], []byte("\n"))
		}
		return &LineError{Path: path, Line: line, Err: err}
	}
	return nil
}

// UpdateDoc is the locked read-modify-write of DESIGN section 4 rule 3: it
// holds the collection lock of path's directory, reads the document into a
// fresh T (exists says whether there was one), calls fn, and writes the
// result if fn returns nil. Returning ErrNoChange from fn skips the write.
func UpdateDoc[T any](ctx context.Context, s *Store, path string, perm os.FileMode, fn func(doc *T, exists bool) error) (T, error) {
	var doc T
	unlock, err := s.LockDir(ctx, filepath.Dir(path))
	if err != nil {
		return doc, err
	}
	defer unlock()
	exists := true
	if err := s.ReadDoc(path, &doc); errors.Is(err, ErrNotFound) {
		exists = false
	} else if err != nil {
		return doc, err
	}
	if err := fn(&doc, exists); err != nil {
		if errors.Is(err, ErrNoChange) {
			return doc, nil
		}
		return doc, err
	}
	return doc, s.WriteDoc(path, &doc, perm)
}

// ErrNoChange, returned by an UpdateDoc function, leaves the document as it was.
var ErrNoChange = errors.New("no change")

// writeFileAtomic writes data to a temp file beside path, syncs it, renames
// it over path and syncs the directory so the new name is durable.
func writeFileAtomic(path string, data []byte, perm os.FileMode, durable bool) error {
	return lockedfile.WriteAtomic(path, data, perm, durable, nil)
}

func syncDir(dir string) error { return lockedfile.SyncDir(dir) }
