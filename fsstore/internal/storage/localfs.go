package storage

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"golang.org/x/sys/unix"
)

// networkFilesystems names the filesystems aipm refuses, by the f_type
// statfs(2) reports: the constants of linux/magic.h (golang.org/x/sys/unix
// is generated from it). FUSE covers every FUSE-based filesystem, fuseblk,
// sshfs and virtiofs included: the kernel reports one magic for them all,
// and it cannot tell a local one (ntfs-3g) from a remote one. OCFS2 is a
// cluster filesystem on a disk other hosts write too: the same blind
// inotify. Remote filesystems without a constant in linux/magic.h (GFS2,
// Lustre, GPFS, GlusterFS over its own client) are not known here.
var networkFilesystems = map[int64]string{
	unix.NFS_SUPER_MAGIC:   "nfs",
	unix.SMB_SUPER_MAGIC:   "smb",
	unix.SMB2_SUPER_MAGIC:  "smb2",
	unix.CIFS_SUPER_MAGIC:  "cifs",
	unix.FUSE_SUPER_MAGIC:  "fuse",
	unix.V9FS_MAGIC:        "9p",
	unix.CEPH_SUPER_MAGIC:  "ceph",
	unix.AFS_SUPER_MAGIC:   "afs",
	unix.AFS_FS_MAGIC:      "kafs",
	unix.CODA_SUPER_MAGIC:  "coda",
	unix.NCP_SUPER_MAGIC:   "ncp",
	unix.OCFS2_SUPER_MAGIC: "ocfs2",
}

// NetworkFilesystem returns the name of the network filesystem whose
// statfs f_type is magic, and false for any other filesystem.
func NetworkFilesystem(magic int64) (string, bool) {
	name, ok := networkFilesystems[magic]
	return name, ok
}

// NetworkFilesystemNames lists the names of the refused filesystems, sorted.
func NetworkFilesystemNames() []string {
	names := make([]string, 0, len(networkFilesystems))
	for _, n := range networkFilesystems {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// testHookStatfs, in tests, replaces statfs(2): it returns the f_type of
// the filesystem path is on. PretendFilesystem sets it too.
var TestHookStatfs func(path string) (int64, error)

// PretendFilesystem is a test knob: from now on this process takes every
// directory to be on the filesystem named (one of NetworkFilesystemNames,
// or "local" for one aipm accepts) instead of asking statfs. Only the test
// binary of cmd/aipm calls it, when its environment sets AIPM_TEST_FSTYPE
// (testdata/script/remote_fs.txtar); the aipm binary never does.
func PretendFilesystem(name string) error {
	if name == "local" {
		TestHookStatfs = func(string) (int64, error) { return unix.TMPFS_MAGIC, nil }
		return nil
	}
	for magic, n := range networkFilesystems {
		if n == name {
			TestHookStatfs = func(string) (int64, error) { return magic, nil }
			return nil
		}
	}
	return fmt.Errorf("no filesystem named %q to pretend: name one of %v, or local", name, NetworkFilesystemNames())
}

// localDirs holds the directories found on a local filesystem by this
// process: each is asked once (a refusal is asked again, as it ends the
// command anyway).
var LocalDirs sync.Map // path -> struct{}

// statfsType is the f_type of the filesystem dir is on.
func statfsType(dir string) (int64, error) {
	if TestHookStatfs != nil {
		return TestHookStatfs(dir)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Type), nil
}

// networkFilesystemOf returns the name of the network filesystem dir is on,
// or "" when it is on a local one. A statfs that fails is an error.
func NetworkFilesystemOf(dir string) (string, error) {
	if TestHookStatfs == nil {
		if _, ok := LocalDirs.Load(dir); ok {
			return "", nil
		}
	}
	magic, err := statfsType(dir)
	if err != nil {
		return "", fmt.Errorf("check the filesystem of %s: %w", dir, err)
	}
	if name, ok := NetworkFilesystem(magic); ok {
		return name, nil
	}
	if TestHookStatfs == nil {
		LocalDirs.Store(dir, struct{}{})
	}
	return "", nil
}

// networkRefusal is the one sentence of the refusal: what is on which
// network filesystem, why that breaks aipm, and the way that works.
func networkRefusal(what, fsName string) error {
	return Kindf(ErrNetworkFilesystem, "%s is on a network filesystem (%s): %s", what, fsName, NetworkAdvice)
}

// networkAdvice is why, and the remote way (docs/operations.md and docs/remote.md).
const NetworkAdvice = "its locks and appends are not safe there and this machine cannot see other hosts' writes; " +
	"keep .ai-pm on one machine's local disk and reach it from the others with ssh -T HOST aipm --dir PATH serve --agent ID, " +
	"or aipm serve --http (docs/remote.md)"

// checkLocal refuses a store whose .ai-pm/ is on a network filesystem:
// Open runs it once per directory and process.
func checkLocal(root string) error {
	name, err := NetworkFilesystemOf(root)
	if err != nil {
		return err
	}
	if name != "" {
		return networkRefusal(DirName, name)
	}
	return nil
}

// checkLocalProject refuses to create .ai-pm/ in a project directory on a
// network filesystem (Init, before it writes anything). A directory that
// does not exist is left to Init's own error.
func CheckLocalProject(dir string) error {
	name, err := NetworkFilesystemOf(dir)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil
	case err != nil:
		return err
	case name != "":
		return networkRefusal(dir, name)
	}
	return nil
}

// filesystemProblems is doctor's report of a network filesystem (Open
// refuses one; OpenToCheck lets doctor in to say so), and whether it was
// found: repair is then withheld, since another host may be writing the
// lines it would move.
func (s *Files) FilesystemProblems() ([]Problem, bool) {
	name, err := NetworkFilesystemOf(s.root)
	switch {
	case err != nil:
		return []Problem{{Path: DirName, Reason: err.Error()}}, false
	case name == "":
		return nil, false
	}
	return []Problem{{Path: DirName, Reason: fmt.Sprintf("on a network filesystem (%s), so aipm refuses it and doctor --repair repairs nothing: %s", name, NetworkAdvice)}}, true
}

// OnNetworkFilesystem returns the name of the network filesystem .ai-pm/
// is on, or "" when it is on a local one (or statfs fails: doctor reports
// that as a problem of its own).
func (s *Files) OnNetworkFilesystem() string {
	name, _ := NetworkFilesystemOf(s.root)
	return name
}
