// Package fsstoretest holds what other packages' tests may turn in the
// store beneath them, as net/http/httptest serves net/http's tests: never
// linked into the aipm binary (cmd/aipm's TestUserBinaryDeps).
package fsstoretest

import "aipm/fsstore/internal/storage"

// PretendFilesystem makes this process take every directory to be on the
// filesystem named (nfs, smb2, fuse, 9p, ..., or "local" for one aipm
// accepts) instead of asking statfs: the refusal of a network filesystem,
// tested where no such filesystem can be mounted. It lasts as long as the
// process.
func PretendFilesystem(name string) error {
	_, err := storage.PretendFilesystem(name)
	return err
}
