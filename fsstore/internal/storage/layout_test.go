package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"aipm/internal/lockedfile"
)

// TestFailedSaysThePathOnce: an error about a file of the project names it
// once, relative to the project, whatever the words beneath it said (an
// agent on another machine reads these errors: it learns nothing of the
// home's layout), and errors.Is still sees what failed.
func TestFailedSaysThePathOnce(t *testing.T) {
	l := layout{project: "/home/alice/src/shop", root: "/home/alice/src/shop/.ai-pm"}
	path := "/home/alice/src/shop/.ai-pm/leases/leases.json"
	for _, tc := range []struct {
		name string
		err  error
		want string
		is   error
	}{
		{"the system's", &fs.PathError{Op: "open", Path: path, Err: syscall.EACCES}, "read .ai-pm/leases/leases.json: permission denied", fs.ErrPermission},
		{"lockedfile's", fmt.Errorf("%s: %w", path, lockedfile.ErrNotRegular), "read .ai-pm/leases/leases.json: " + lockedfile.ErrNotRegular.Error(), lockedfile.ErrNotRegular},
		{"twice", fmt.Errorf("read %s: %w", path, &fs.PathError{Op: "read", Path: path, Err: syscall.EIO}), "read .ai-pm/leases/leases.json: input/output error", syscall.EIO},
		{"said relative before", l.Failed("read", path, fmt.Errorf("lock %s: %w", path, syscall.ENOLCK)), "read .ai-pm/leases/leases.json: no locks available", syscall.ENOLCK},
		{"another file of the project", &os.LinkError{Op: "rename", Old: "/home/alice/src/shop/.ai-pm/leases/.leases.json.tmp-1", New: path, Err: syscall.ENOSPC},
			"read .ai-pm/leases/leases.json: rename .ai-pm/leases/.leases.json.tmp-1 .ai-pm/leases/leases.json: no space left on device", syscall.ENOSPC},
		{"words of its own", errors.New("it ends too early"), "read .ai-pm/leases/leases.json: it ends too early", nil},
	} {
		err := l.Failed("read", path, tc.err)
		if err.Error() != tc.want || strings.Contains(err.Error(), "/home/alice") {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, err, tc.want)
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: errors.Is(%v) is false", tc.name, tc.is)
		}
	}
}

// TestDocErrorsNameRelativePaths: what ReadDoc and UpdateDoc say of a
// damaged document names it once, relative to the project.
func TestDocErrorsNameRelativePaths(t *testing.T) {
	s := newTestFiles(t)
	path := s.LeasesPath()
	if err := os.MkdirAll(path, 0o755); err != nil { // a directory where the document should be
		t.Fatal(err)
	}
	var v map[string]any
	check := func(what string, err error) {
		t.Helper()
		rel := filepath.Join(DirName, "leases", "leases.json")
		if err == nil || strings.Contains(err.Error(), s.ProjectDir()) || strings.Count(err.Error(), rel) != 1 {
			t.Errorf("%s: %v; want %s named once, relative", what, err, rel)
		}
	}
	check("ReadDoc", s.ReadDoc(path, &v))
	_, err := UpdateDoc(context.Background(), s, path, ModeFile, func(doc *map[string]any, _ bool) error { return nil })
	check("UpdateDoc", err)
}
