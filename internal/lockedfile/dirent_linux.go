package lockedfile

import (
	"encoding/binary"
	"os"
	"syscall"
)

// ReadDirInodes lists the names in dir with their inode numbers, as the
// directory itself records them (getdents64): what tells a file replaced by
// a rename from the same file, without a stat per name.
func ReadDirInodes(dir string) (map[string]uint64, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]uint64{}
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.ReadDirent(int(f.Fd()), buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "readdirent", Path: dir, Err: err}
		}
		if n <= 0 {
			return out, nil
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
				out[string(name)] = ino
			}
			b = b[reclen:]
		}
	}
}
