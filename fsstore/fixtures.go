package fsstore

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Fixtures build large projects fast, for benchmarks and tests (aipm
// bench): documents and log lines go straight to their files, with no
// lock, no compare-and-swap and no fsync per write, and no index kept (a
// session document written here is one an older aipm left). Never for a
// live project: nothing else may be writing to it.
type Fixtures struct{ l Layout }

// FixturesOf returns the fixture writer of s's project.
func FixturesOf(s *Store) Fixtures { return Fixtures{l: s.Layout} }

// Doc writes doc as collection's document id.
func (f Fixtures) Doc(collection, id string, doc any) error {
	path, err := f.l.DocPath(collection, id)
	if err != nil {
		return err
	}
	data, err := EncodeDoc(doc)
	if err != nil {
		return err
	}
	perm, dirPerm := os.FileMode(ModeFile), os.FileMode(ModeDir)
	if collection == Sessions {
		perm, dirPerm = ModePrivateFile, ModePrivateDir
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
	if rel, err := filepath.Rel(f.l.root, path); err != nil || !filepath.IsLocal(rel) {
		return fmt.Errorf("fixture %s: not under %s", path, DirName)
	}
	if err := os.MkdirAll(filepath.Dir(path), ModeDir); err != nil {
		return err
	}
	file, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, ModeFile)
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
