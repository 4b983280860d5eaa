package storage

import (
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
		name, ok := networkFilesystem(c.magic)
		if name != c.name || ok != (c.name != "") {
			t.Errorf("networkFilesystem(%#x) = %q, %v; want %q, %v", c.magic, name, ok, c.name, c.name != "")
		}
	}
	if got := len(networkFilesystemNames()); got != 12 {
		t.Errorf("%d refused filesystems, the table above has 12: add the new one there", got)
	}
}

// TestNetworkFilesystemStatfsFails: a statfs that fails is an error with
// the directory; for init, a directory that does not exist is left to
// Init's own error (fsstore's TestInitInMissingDirectory).
func TestNetworkFilesystemStatfsFails(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	if _, err := networkFilesystemOf(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("statfs of a missing directory: %v", err)
	}
	if err := CheckLocalProject(missing); err != nil {
		t.Errorf("checkLocalProject(missing) = %v, want nil (Init says it)", err)
	}
}

// TestPretendFilesystem: the knob knows the table's names and local, and
// refuses any other.
func TestPretendFilesystem(t *testing.T) {
	for _, name := range append(networkFilesystemNames(), "local") {
		stop, err := PretendFilesystem(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		got, err := networkFilesystemOf(t.TempDir())
		if want := strings.Replace(name, "local", "", 1); err != nil || got != want {
			t.Errorf("pretending %s: %q, %v", name, got, err)
		}
	}
	if _, err := PretendFilesystem("ext5"); err == nil {
		t.Error("PretendFilesystem(ext5) accepted")
	}
}

// TestNetworkAdviceAnchor: the page the refusal points to exists.
func TestNetworkAdviceAnchor(t *testing.T) {
	if !strings.Contains(networkAdvice, "(docs/remote.md)") {
		t.Fatal("the refusal names no page")
	}
	if _, err := os.Stat(filepath.Join("..", "..", "..", "docs", "remote.md")); err != nil {
		t.Errorf("the refusal points to docs/remote.md: %v", err)
	}
}

// TestOpenRemembersLocal: a .ai-pm on a network filesystem is refused at
// every open; one found on a local filesystem is remembered, so that the
// next open does not ask statfs again.
func TestOpenRemembersLocal(t *testing.T) {
	dir := newTestFiles(t).ProjectDir()
	stop := pretend(t, 0xFE534D42)
	if _, err := OpenFiles(dir, true); !errors.Is(err, ErrNetworkFilesystem) || !strings.HasPrefix(err.Error(), ".ai-pm is on a network filesystem (smb2): ") {
		t.Fatalf("OpenFiles on smb2: %v", err)
	}
	stop()
	s, err := OpenFiles(dir, true)
	if err != nil {
		t.Fatalf("OpenFiles on the real (local) filesystem: %v", err)
	}
	if _, ok := localDirs.Load(s.Root()); !ok {
		t.Errorf("a local .ai-pm is not remembered: every Open would ask statfs again")
	}
}

// pretend makes every statfs of this test answer magic, until the test
// ends or stop is called.
func pretend(t *testing.T, magic int64) (stop func()) {
	t.Helper()
	was := pretended.Swap(&magic)
	stop = func() { pretended.Store(was) }
	t.Cleanup(stop)
	return stop
}
