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

// TestNetworkFilesystemMagic: the f_type values statfs reports, written
// here as linux/magic.h spells them (not through the constants the table
// uses), map to the names the refusal prints; local filesystems map to none.
func TestNetworkFilesystemMagic(t *testing.T) {
	for _, c := range []struct {
		magic int64
		name  string // "" for a filesystem aipm accepts
	}{
		{0x6969, "nfs"},
		{0x517B, "smb"},
		{0xFE534D42, "smb2"},
		{0xFF534D42, "cifs"},
		{0x65735546, "fuse"},
		{0x01021997, "9p"},
		{0x00C36400, "ceph"},
		{0x5346414F, "afs"},
		{0x6B414653, "kafs"},
		{0x73757245, "coda"},
		{0x564C, "ncp"},
		{0x7461636F, "ocfs2"},
		{0xEF53, ""},       // ext2/3/4
		{0x58465342, ""},   // xfs
		{0x9123683E, ""},   // btrfs
		{0x01021994, ""},   // tmpfs
		{0x794C7630, ""},   // overlayfs
		{0x2FC12FC1, ""},   // zfs
		{0xF2F52010, ""},   // f2fs
		{0x0, ""},          // nothing
		{0x6969 << 32, ""}, // no truncation matches a foreign magic
	} {
		name, ok := storage.NetworkFilesystem(c.magic)
		if name != c.name || ok != (c.name != "") {
			t.Errorf("NetworkFilesystem(%#x) = %q, %v; want %q, %v", c.magic, name, ok, c.name, c.name != "")
		}
	}
	if got := len(storage.NetworkFilesystemNames()); got != 12 {
		t.Errorf("%d refused filesystems, the table above has 12: add the new one there", got)
	}
}

// pretend makes every statfs of this test answer magic.
func pretend(t *testing.T, magic int64) {
	t.Helper()
	storage.TestHookStatfs = func(string) (int64, error) { return magic, nil }
	t.Cleanup(func() { storage.TestHookStatfs = nil })
}

// TestInitRefusesNetworkFilesystem: init on NFS creates nothing and says
// what to do instead.
func TestInitRefusesNetworkFilesystem(t *testing.T) {
	dir := t.TempDir()
	pretend(t, 0x6969)
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
// in, which reports it first and repairs nothing.
func TestOpenRefusesNetworkFilesystem(t *testing.T) {
	s, _ := leadAndCoder(t)
	chat, err := s.files.ChatPath("coder")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(chat, []byte(`{"id":"msg_01","senderId":"lead","content":"torn"`), storage.ModeFile); err != nil {
		t.Fatal(err)
	}
	pretend(t, 0xFE534D42)
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

	storage.TestHookStatfs = nil
	if _, err := Open(s.files.ProjectDir()); err != nil {
		t.Fatalf("Open on the real (local) filesystem: %v", err)
	}
	if _, ok := storage.LocalDirs.Load(s.files.Root()); !ok {
		t.Errorf("a local .ai-pm is not remembered: every Open would ask statfs again")
	}
	problems, err = s.Doctor(context.Background(), true)
	if err != nil || len(problems) != 1 || !problems[0].Repaired {
		t.Errorf("doctor --repair locally: %v, %v; want the torn line repaired", problems, err)
	}
}

// TestNetworkFilesystemStatfsFails: a statfs that fails is an error with
// the directory; for init, a directory that does not exist is left to
// Init's own error.
func TestNetworkFilesystemStatfsFails(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	if _, err := storage.NetworkFilesystemOf(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("statfs of a missing directory: %v", err)
	}
	if err := storage.CheckLocalProject(missing); err != nil {
		t.Errorf("checkLocalProject(missing) = %v, want nil (Init says it)", err)
	}
	if _, err := Init(missing, "x"); err == nil || errors.Is(err, storage.ErrNetworkFilesystem) {
		t.Errorf("Init in a missing directory: %v", err)
	}
}

// TestPretendFilesystem: the knob knows the table's names and local, and
// refuses any other.
func TestPretendFilesystem(t *testing.T) {
	t.Cleanup(func() { storage.TestHookStatfs = nil })
	for _, name := range append(storage.NetworkFilesystemNames(), "local") {
		if err := storage.PretendFilesystem(name); err != nil {
			t.Fatal(err)
		}
		got, err := storage.NetworkFilesystemOf(t.TempDir())
		if want := strings.Replace(name, "local", "", 1); err != nil || got != want {
			t.Errorf("pretending %s: %q, %v", name, got, err)
		}
	}
	if err := storage.PretendFilesystem("ext5"); err == nil {
		t.Error("PretendFilesystem(ext5) accepted")
	}
}

// TestNetworkAdviceAnchor: the page the refusal points to exists.
func TestNetworkAdviceAnchor(t *testing.T) {
	if !strings.Contains(storage.NetworkAdvice, "(docs/remote.md)") {
		t.Fatal("the refusal names no page")
	}
	if _, err := os.Stat(filepath.Join("..", "docs", "remote.md")); err != nil {
		t.Errorf("the refusal points to docs/remote.md: %v", err)
	}
}
