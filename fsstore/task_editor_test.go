package fsstore

import (
	"aipm/fsstore/internal/storage"
	"aipm/internal/helperproc"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// tortureLong runs the attack suite's multi-process tests in their long
// form (docs/operations.md, "The attack suite").
var tortureLong = flag.Bool("torture.long", false, "run the torture tests for minutes instead of seconds")

func init() {
	helperRoles["task-editor-flock"] = func(h *helperProc) error { return helperTaskEditor(h, true) }
	helperRoles["task-editor-bare"] = func(h *helperProc) error { return helperTaskEditor(h, false) }
	helperRoles["task-updater"] = helperTaskUpdater
}

// helperTaskEditor is a human's editor saving the task file arg n times by
// rename-replace, each save adding one mark to a key aipm does not know;
// with flock, each read-modify-write holds the file's flock (taken, then
// checked to still be the file the path names, as docs/files.md says).
// It prints each save.
func helperTaskEditor(h *helperProc, flock bool) error {
	for i := 0; i < h.n; i++ {
		if err := editorSave(h.arg, i, flock); err != nil {
			return err
		}
		fmt.Fprintln(h.out, "saved", i)
	}
	return nil
}

func editorSave(path string, mark int, flock bool) error {
	_, err := editDoc(path, ".editor-swap", flock, func(doc map[string]any) {
		marks, _ := doc["editorMarks"].([]any)
		doc["editorMarks"] = append(marks, mark)
	})
	return err
}

// editDoc is a human's editor saving the JSON document at path: read it
// (with flock, under the file's lock first, as docs/files.md asks of an
// editor), change it, write it to the swap file beside it and rename that
// over it. It returns the document as saved.
func editDoc(path, swap string, flock bool, change func(doc map[string]any)) (map[string]any, error) {
	if flock {
		f, err := editorLock(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("editor read %q: %w", data, err)
	}
	change(doc)
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	tmp := filepath.Join(filepath.Dir(path), swap)
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		return nil, err
	}
	return doc, os.Rename(tmp, path)
}

// editorLock is the editor's side of the lock: flock the file, then check
// that the path still names it (else someone replaced it: lock the new one).
func editorLock(path string) (*os.File, error) {
	for {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, err
		}
		held, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return f, nil
		}
		f.Close()
	}
}

// helperTaskUpdater changes task arg's description through UpdateTask
// until the stop file exists, printing each change made.
func helperTaskUpdater(h *helperProc) error {
	cfg, err := h.store.files.LoadConfig()
	if err != nil {
		return err
	}
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(h.dir, "stop")); err == nil {
			return nil
		}
		d := fmt.Sprintf("%s %d", h.name, i)
		_, err := h.store.UpdateTask(h.ctx, cfg, h.arg, "lead", TaskChange{Description: &d})
		if err != nil && !strings.Contains(err.Error(), "changed by someone else") {
			return err
		}
		fmt.Fprintln(h.out, "updated", err == nil)
		h.out.Flush()
	}
}

// An editor that takes the task file's flock for its read-modify-write is
// never overwritten by aipm's compare-and-swap, however often UpdateTask
// races it from other processes; one that takes no lock is counted (it can
// lose a save only by renaming within the exchange window).
func TestEditorSavesRacingUpdateTask(t *testing.T) {
	saves := 300
	if *tortureLong {
		saves = 5000
	}
	for _, role := range []string{"task-editor-flock", "task-editor-bare"} {
		lost := editorRace(t, role, saves)
		t.Logf("%s: %d of %d saves lost", role, lost, saves)
		if role == "task-editor-flock" && lost > 0 {
			t.Errorf("an editor holding the file's flock lost %d of %d saves to UpdateTask", lost, saves)
		}
	}
}

// editorRace runs one editor (role) against two UpdateTask processes and
// returns how many of the editor's saves are missing at the end.
func editorRace(t *testing.T, role string, saves int) int {
	s, cfg := leadAndCoder(t)
	ctx := context.Background()
	task, err := s.CreateTask(ctx, cfg, NewTask{Title: "t", Assignee: "coder"})
	if err != nil {
		t.Fatal(err)
	}
	path, _ := s.files.DocPath(storage.Tasks, task.ID)
	var updaters []func() error
	for i := 0; i < 2; i++ {
		cmd := helperproc.Command(t, "task-updater", s.files.ProjectDir(), task.ID, "0")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		updaters = append(updaters, cmd.Wait)
	}
	out, err := helperproc.Command(t, role, s.files.ProjectDir(), path, strconv.Itoa(saves)).Output()
	os.WriteFile(filepath.Join(s.files.ProjectDir(), "stop"), nil, 0o644)
	var errs []error
	for _, wait := range updaters {
		errs = append(errs, wait())
	}
	if err != nil || errors.Join(errs...) != nil || strings.Count(string(out), "saved") != saves {
		t.Fatalf("editor: %v, updaters: %v; the editor said:\n%s", err, errors.Join(errs...), out)
	}
	var doc struct {
		Marks []int `json:"editorMarks"`
	}
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, m := range doc.Marks {
		seen[m] = true
	}
	lost := 0
	for i := 0; i < saves; i++ {
		if !seen[i] {
			lost++
		}
	}
	return lost
}
