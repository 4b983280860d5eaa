package storage

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

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

// networkFilesystem returns the name of the network filesystem whose
// statfs f_type is magic, and false for any other filesystem.
func networkFilesystem(magic int64) (string, bool) {
	name, ok := networkFilesystems[magic]
	return name, ok
}

// networkFilesystemNames lists the names of the refused filesystems, sorted.
func networkFilesystemNames() []string {
	names := make([]string, 0, len(networkFilesystems))
	for _, n := range networkFilesystems {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// pretended, when set, is the f_type every statfs of this process answers
// instead of asking the kernel (PretendFilesystem, and storage's tests).
var pretended atomic.Pointer[int64]

// PretendFilesystem is a test knob: from now on this process takes every
// directory to be on the filesystem named (one of networkFilesystemNames,
// or "local" for one aipm accepts) instead of asking statfs, until stop is
// called. Only tests call it: the test binary of cmd/aipm when its
// environment sets AIPM_TEST_FSTYPE (testdata/script/remote_fs.txtar,
// through fsstore/fsstoretest), and fsstore's; the aipm binary never does.
func PretendFilesystem(name string) (stop func(), err error) {
	magic, ok := int64(unix.TMPFS_MAGIC), name == "local"
	for m, n := range networkFilesystems {
		if n == name {
			magic, ok = m, true
		}
	}
	if !ok {
		return nil, fmt.Errorf("no filesystem named %q to pretend: name one of %v, or local", name, networkFilesystemNames())
	}
	was := pretended.Swap(&magic)
	return func() { pretended.Store(was) }, nil
}

// localDirs holds the directories found on a local filesystem by this
// process: each is asked once (a refusal is asked again, as it ends the
// command anyway).
var localDirs sync.Map // path -> struct{}

// statfsType is the f_type of the filesystem dir is on.
func statfsType(dir string) (int64, error) {
	if magic := pretended.Load(); magic != nil {
		return *magic, nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Type), nil
}

// networkFilesystemOf returns the name of the network filesystem dir is on,
// or "" when it is on a local one. A statfs that fails is an error.
func networkFilesystemOf(dir string) (string, error) {
	pretending := pretended.Load() != nil
	if !pretending {
		if _, ok := localDirs.Load(dir); ok {
			return "", nil
		}
	}
	magic, err := statfsType(dir)
	if err != nil {
		return "", fmt.Errorf("check the filesystem of %s: %w", dir, err)
	}
	if name, ok := networkFilesystem(magic); ok {
		return name, nil
	}
	if !pretending {
		localDirs.Store(dir, struct{}{})
	}
	return "", nil
}

// networkRefusal is the one sentence of the refusal: what is on which
// network filesystem, why that breaks aipm, and the way that works.
func networkRefusal(what, fsName string) error {
	return Kindf(ErrNetworkFilesystem, "%s is on a network filesystem (%s): %s", what, fsName, networkAdvice)
}

// networkAdvice is why, and the remote way (docs/operations.md and docs/remote.md).
const networkAdvice = "its locks and appends are not safe there and this machine cannot see other hosts' writes; " +
	"keep .ai-pm on one machine's local disk and reach it from the others with ssh -T HOST aipm --dir PATH serve --agent ID, " +
	"or aipm serve --http (docs/remote.md)"

// checkLocal refuses a store whose .ai-pm/ is on a network filesystem:
// Open runs it once per directory and process.
func checkLocal(root string) error {
	name, err := networkFilesystemOf(root)
	if err != nil {
		return err
	}
	if name != "" {
		return networkRefusal(DirName, name)
	}
	return nil
}

// CheckLocalProject refuses to create .ai-pm/ in a project directory on a
// network filesystem (Init, before it writes anything). A directory that
// does not exist is left to Init's own error.
func CheckLocalProject(dir string) error {
	name, err := networkFilesystemOf(dir)
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

// FilesystemProblems is doctor's report of a network filesystem (Open
// refuses one; OpenToCheck lets doctor in to say so), and whether it was
// found: repair is then withheld, since another host may be writing the
// lines it would move.
func (s *Files) FilesystemProblems() ([]Problem, bool) {
	name, err := networkFilesystemOf(s.root)
	switch {
	case err != nil:
		return []Problem{{Path: DirName, Reason: err.Error()}}, false
	case name == "":
		return nil, false
	}
	return []Problem{{Path: DirName, Reason: fmt.Sprintf("on a network filesystem (%s), so aipm refuses it and doctor --repair repairs nothing: %s", name, networkAdvice)}}, true
}

// OnNetworkFilesystem returns the name of the network filesystem .ai-pm/
// is on, or "" when it is on a local one (or statfs fails: doctor reports
// that as a problem of its own).
func (s *Files) OnNetworkFilesystem() string {
	name, _ := networkFilesystemOf(s.root)
	return name
}
