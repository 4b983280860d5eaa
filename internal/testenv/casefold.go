package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// CaseInsensitiveDir returns a directory of a case-insensitive file
// system (as macOS's and Windows's are by default), mounted for t and
// unmounted when it ends: a tmpfs mounted with casefold (Linux 6.13 and
// later, built with CONFIG_UNICODE), else an exFAT image on a loop device
// through FUSE (mkfs.exfat from exfatprogs, mount.exfat-fuse from
// exfat-fuse). Each is checked to tell no case apart before it is used. It
// skips t, naming what this machine lacks, when neither can be had (they
// need root). The FUSE one is a file system aipm refuses as possibly
// remote: a test opening a store there pretends it local.
func CaseInsensitiveDir(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		SkipMissing(t, "a case-insensitive directory (mounting one needs root)")
	}
	base := t.TempDir()
	dir, errTmpfs := mountCasefoldTmpfs(t, base)
	if errTmpfs == nil {
		return dir
	}
	dir, errExfat := mountExfat(t, base)
	if errExfat == nil {
		return dir
	}
	SkipMissing(t, fmt.Sprintf("a case-insensitive directory (tmpfs casefold: %v; exFAT through FUSE: %v)", errTmpfs, errExfat))
	return ""
}

// mountCasefoldTmpfs mounts a casefolding tmpfs under base and returns a
// directory of it that folds case.
func mountCasefoldTmpfs(t testing.TB, base string) (string, error) {
	mnt := filepath.Join(base, "tmpfs")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		return "", err
	}
	if err := run("mount", "-t", "tmpfs", "-o", "casefold", "tmpfs", mnt); err != nil {
		return "", err
	}
	t.Cleanup(func() { run("umount", mnt) })
	dir := filepath.Join(mnt, "project")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	if err := run("chattr", "+F", dir); err != nil {
		return "", err
	}
	return dir, foldsCase(dir)
}

// mountExfat makes an exFAT image under base, attaches it to a loop
// device and mounts it through FUSE, all undone when t ends.
func mountExfat(t testing.TB, base string) (string, error) {
	for _, prog := range []string{"losetup", "mkfs.exfat", "mount.exfat-fuse"} {
		if _, err := exec.LookPath(prog); err != nil {
			return "", fmt.Errorf("no %s", prog)
		}
	}
	img, mnt := filepath.Join(base, "exfat.img"), filepath.Join(base, "exfat")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		return "", err
	}
	f, err := os.Create(img)
	if err == nil {
		err = errors.Join(f.Truncate(32<<20), f.Close())
	}
	if err != nil {
		return "", err
	}
	if err := run("mkfs.exfat", img); err != nil {
		return "", err
	}
	out, err := exec.Command("losetup", "--find", "--show", img).Output()
	if err != nil {
		return "", fmt.Errorf("losetup: %w", err)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { run("losetup", "-d", dev) })
	if err := run("mount.exfat-fuse", dev, mnt); err != nil {
		return "", err
	}
	t.Cleanup(func() { run("umount", mnt) })
	return mnt, foldsCase(mnt)
}

// foldsCase checks that dir takes a name in another case for the same
// file.
func foldsCase(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "probe"), nil, 0o644); err != nil {
		return err
	}
	defer os.Remove(filepath.Join(dir, "probe"))
	if _, err := os.Stat(filepath.Join(dir, "PROBE")); err != nil {
		return fmt.Errorf("it tells case apart: %w", err)
	}
	return nil
}

// run runs a program, its error naming what it said.
func run(prog string, args ...string) error {
	if out, err := exec.Command(prog, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v: %s", prog, err, strings.TrimSpace(string(out)))
	}
	return nil
}
