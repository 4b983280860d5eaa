package lockedfile

import (
	"encoding/binary"
	"os"
	"syscall"
)

// ReadDirInodes calls fn with each name in dir and its inode number, as the
// directory itself records them (getdents64): what tells a file replaced by
// a rename from the same file, without a stat per name. The name is only
// valid during the call: a listing of 10^4 names holds none of them (a
// caller keeps the few it needs).
func ReadDirInodes(dir string, fn func(name []byte, ino uint64)) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.ReadDirent(int(f.Fd()), buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "readdirent", Path: dir, Err: err}
		}
		if n <= 0 {
			return nil
		}
		// struct linux_dirent64 { u64 d_ino; s64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				break
			}
			ino := binary.NativeEndian.Uint64(b[0:8])
			name := b[19:reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			if ino != 0 && string(name) != "." && string(name) != ".." {
				fn(name, ino)
			}
			b = b[reclen:]
		}
	}
}
