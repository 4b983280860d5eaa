package fsstore

import (
	"aipm/fsstore/storage"
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Fixtures build large projects fast, for benchmarks and tests
// (aipm-bench): documents and log lines go straight to their files, with no
// lock, no compare-and-swap and no fsync per write, and no index kept (a
// session document written here is one an older aipm left). Never for a
// live project: nothing else may be writing to it.
type Fixtures struct {
	l storage.Layout
	s *Store
}

// FixturesOf returns the fixture writer of s's project.
func FixturesOf(s *Store) Fixtures { return Fixtures{l: s.Layout, s: s} }

// Collections creates the directories of collections (with the layout's
// modes) before anything is written to them, so that a watcher started
// next watches them from its first pass.
func (f Fixtures) Collections(collections ...string) error {
	for _, c := range collections {
		if err := f.s.MkdirAll(f.s.CollectionDir(c)); err != nil {
			return fmt.Errorf("fixture %s: %w", c, err)
		}
	}
	return nil
}

// Doc writes doc as collection's document id.
func (f Fixtures) Doc(collection, id string, doc any) error {
	path, err := f.l.DocPath(collection, id)
	if err != nil {
		return err
	}
	data, err := storage.EncodeDoc(doc)
	if err != nil {
		return err
	}
	perm, dirPerm := os.FileMode(storage.ModeFile), os.FileMode(storage.ModeDir)
	if collection == storage.Sessions {
		perm, dirPerm = storage.ModePrivateFile, storage.ModePrivateDir
	}
	if err := os.MkdirAll(filepath.Dir(path), dirPerm); err != nil {
		return fmt.Errorf("fixture %s: %w", f.l.Rel(path), err)
	}
	if err := os.WriteFile(path, data, perm); err != nil {
		return fmt.Errorf("fixture %s: %w", f.l.Rel(path), err)
	}
	return nil
}

// Lines appends n lines to the JSONL file at path, which must be under
// .ai-pm/ (a chat log, a notifications file), the i-th being line(i)
// encoded as JSON, and syncs the file once at the end.
func (f Fixtures) Lines(path string, n int, line func(i int) any) error {
	if rel, err := filepath.Rel(f.l.Root(), path); err != nil || !filepath.IsLocal(rel) {
		return fmt.Errorf("fixture %s: not under %s", path, storage.DirName)
	}
	if err := os.MkdirAll(filepath.Dir(path), storage.ModeDir); err != nil {
		return err
	}
	file, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, storage.ModeFile)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(file, 1<<20)
	for i := range n {
		data, err := json.Marshal(line(i))
		if err != nil {
			file.Close()
			return err
		}
		w.Write(data)
		w.WriteByte('\n')
	}
	return errors.Join(w.Flush(), file.Sync(), file.Close())
}

// HandEdit changes collection's document id the way a human's editor saves
// it: the file read, edit applied to its fields, and a new file renamed
// over the old one, with no lock and no aipm rule. Unlike the other
// fixtures it is meant for a live project: it is the hand edit that aipm
// (the watcher, a compare-and-swap) must cope with, as aipm demo shows.
func (f Fixtures) HandEdit(collection, id string, edit func(fields map[string]any)) error {
	path, err := f.l.DocPath(collection, id)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("hand edit %s: %w", f.l.Rel(path), err)
	}
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		return fmt.Errorf("hand edit %s: %w", f.l.Rel(path), err)
	}
	edit(fields)
	if data, err = json.MarshalIndent(fields, "", "  "); err != nil {
		return fmt.Errorf("hand edit %s: %w", f.l.Rel(path), err)
	}
	tmp := path + "~" // an editor's backup name: not a document of the collection
	if err := os.WriteFile(tmp, append(data, '\n'), storage.ModeFile); err != nil {
		return fmt.Errorf("hand edit %s: %w", f.l.Rel(path), err)
	}
	return os.Rename(tmp, path)
}
