package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInitRefusesNetworkFilesystem: init on NFS creates nothing and says
// what to do instead.
func TestInitRefusesNetworkFilesystem(t *testing.T) {
	dir := t.TempDir()
	pretendFilesystem(t, "nfs")
	_, err := Init(dir, "r")
	if !errors.Is(err, storage.ErrNetworkFilesystem) {
		t.Fatalf("Init on nfs: %v, want ErrNetworkFilesystem", err)
	}
	want := dir + " is on a network filesystem (nfs): its locks and appends are not safe there and this machine cannot see other hosts' writes; keep .ai-pm on one machine's local disk and reach it from the others with ssh -T HOST aipm --dir PATH serve --agent ID, or aipm serve --http (docs/remote.md)"
	if err.Error() != want {
		t.Errorf("Init on nfs said\n%s\nwant\n%s", err, want)
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("Init on nfs left %v (%v) in the project directory", ents, err)
	}
}

// TestOpenRefusesNetworkFilesystem: a project made on a local disk and then
// seen on a network filesystem is refused by Open; OpenToCheck lets doctor
// in, which reports it first and repairs nothing. (That a local one is
// remembered is storage's TestOpenRemembersLocal.)
func TestOpenRefusesNetworkFilesystem(t *testing.T) {
	s, _ := leadAndCoder(t)
	chat, err := s.files.ChatPath("coder")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(chat, []byte(`{"id":"msg_01","senderId":"lead","content":"torn"`), storage.ModeFile); err != nil {
		t.Fatal(err)
	}
	stop := pretendFilesystem(t, "smb2")
	if _, err := Open(s.files.ProjectDir()); !errors.Is(err, storage.ErrNetworkFilesystem) || !strings.HasPrefix(err.Error(), ".ai-pm is on a network filesystem (smb2): ") {
		t.Fatalf("Open on smb2: %v", err)
	}
	checked, err := OpenToCheck(s.files.ProjectDir())
	if err != nil {
		t.Fatalf("OpenToCheck on smb2: %v", err)
	}
	problems, err := checked.Doctor(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 2 || problems[0].Path != storage.DirName || !strings.Contains(problems[0].Reason, "(smb2)") || problems[1].Repaired {
		t.Fatalf("doctor --repair on smb2: %v, want the filesystem, then the torn line unrepaired", problems)
	}
	if _, err := os.Stat(filepath.Join(s.files.Root(), "quarantine")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("doctor --repair on smb2 quarantined something: %v", err)
	}

	stop()
	if _, err := Open(s.files.ProjectDir()); err != nil {
		t.Fatalf("Open on the real (local) filesystem: %v", err)
	}
	problems, err = s.Doctor(context.Background(), true)
	if err != nil || len(problems) != 1 || !problems[0].Repaired {
		t.Errorf("doctor --repair locally: %v, %v; want the torn line repaired", problems, err)
	}
}

// TestInitInMissingDirectory: for init, a directory that does not exist is
// left to Init's own error, not taken for a network filesystem.
func TestInitInMissingDirectory(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	if _, err := Init(missing, "x"); err == nil || errors.Is(err, storage.ErrNetworkFilesystem) {
		t.Errorf("Init in a missing directory: %v", err)
	}
}
