package clientconfig

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Write is mcp-config --write for client in project, merge being the
// client's (clients.Config.Write): every file's new content computed
// first, then all of them written or none, then what changed said on
// stdout.
func Write(stdout io.Writer, client, project string, s Server, merge func(project string, s Server) ([]FileChange, error)) error {
	changes, err := merge(project, s)
	if err == nil {
		err = writeChanges(changes)
	}
	if err != nil {
		return fmt.Errorf("mcp-config %s --write: %w", client, err)
	}
	return printChanges(stdout, project, changes)
}

// writeChanges writes the changed files of changes, all or none: each new
// content goes to a temporary file beside its file, and only when every
// one is written are they renamed into place. When a rename fails, the
// files renamed before it get their old content back (a created one is
// removed, with the directories made for it). Its error is one sentence
// that names the file that failed, and any it could not put back.
func writeChanges(changes []FileChange) error {
	type staged struct {
		c   FileChange
		tmp string
	}
	var (
		todo []staged
		made []string // directories made, parents first
	)
	removeMade := func() {
		for i := len(made) - 1; i >= 0; i-- {
			os.Remove(made[i]) // only when empty: a file in it is not ours
		}
	}
	for _, c := range changes {
		if c.what == "" {
			continue
		}
		dirs, err := mkdirs(filepath.Dir(c.path))
		made = append(made, dirs...)
		var tmp string
		if err == nil {
			tmp, err = stageFile(c.path, c.data, fileMode(c.path))
		}
		if err != nil {
			for _, s := range todo {
				os.Remove(s.tmp)
			}
			removeMade()
			return fmt.Errorf("%s cannot be written (%v), so no file was changed", c.name, PathReason(err))
		}
		todo = append(todo, staged{c, tmp})
	}
	for i, s := range todo {
		err := os.Rename(s.tmp, s.c.path)
		if err == nil {
			continue
		}
		for _, rest := range todo[i:] {
			os.Remove(rest.tmp)
		}
		var back, lost []string
		for j := i - 1; j >= 0; j-- {
			if undo(todo[j].c) == nil {
				back = append(back, todo[j].c.name)
			} else {
				lost = append(lost, todo[j].c.name)
			}
		}
		removeMade()
		msg := fmt.Sprintf("%s cannot be replaced (%v)", s.c.name, PathReason(err))
		switch {
		case len(lost) > 0:
			return fmt.Errorf("%s, and what was already written to %s could not be undone: check it by hand", msg, JoinAnd(lost))
		case len(back) > 0:
			return fmt.Errorf("%s, so what was already written (%s) was put back as it was", msg, strings.Join(back, ", "))
		}
		return fmt.Errorf("%s, so no file was changed", msg)
	}
	return nil
}

// undo puts back what a renamed change replaced: its old content, or no
// file when it created one.
func undo(c FileChange) error {
	if c.created {
		return os.Remove(c.path)
	}
	tmp, err := stageFile(c.path, c.old, fileMode(c.path))
	if err == nil {
		if err = os.Rename(tmp, c.path); err != nil {
			os.Remove(tmp)
		}
	}
	return err
}

// stageFile writes data with mode to a new temporary file in path's
// directory, synced, and returns its name.
func stageFile(path string, data []byte, mode os.FileMode) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// fileMode is the permissions of the file at path, kept when it is
// replaced; 0644 for a new one.
func fileMode(path string) os.FileMode {
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		return fi.Mode().Perm()
	}
	return 0o644
}

// mkdirs makes dir and its missing parents, returning those it had to
// make, parents first (to be removed again if the write is abandoned).
func mkdirs(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); !errors.Is(err, os.ErrNotExist) {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	slices.Reverse(missing)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return missing, fmt.Errorf("its directory cannot be made: %w", PathReason(err))
	}
	return missing, nil
}
