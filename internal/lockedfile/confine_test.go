package lockedfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The one opener refuses, without blocking and without reading them, a
// FIFO, a symbolic link (to a file, to a device), a device and a
// directory; a document larger than MaxDocument is refused by the readers.
func TestOpenRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file.json")
	if err := os.WriteFile(file, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	zero := filepath.Join(dir, "zero.json")
	for target, name := range map[string]string{file: link, "/dev/zero": zero} {
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		path string
		want error
	}{
		{fifo, ErrNotRegular},
		{link, ErrLink},
		{zero, ErrLink},
		{"/dev/null", ErrNotRegular},
		{dir, ErrNotRegular},
	} {
		for _, flag := range []int{os.O_RDONLY, os.O_RDWR | os.O_APPEND | os.O_CREATE, os.O_WRONLY} {
			f, err := OpenFile(tc.path, flag, 0o644)
			if err == nil {
				f.Close()
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("OpenFile(%s, %#o) = %v, want %v", tc.path, flag, err, tc.want)
			}
		}
		if _, _, err := ReadDoc(tc.path); !errors.Is(err, tc.want) {
			t.Errorf("ReadDoc(%s) = %v, want %v", tc.path, err, tc.want)
		}
		if _, err := Lock(context.Background(), tc.path, 0o600); !errors.Is(err, tc.want) {
			t.Errorf("Lock(%s) = %v, want %v", tc.path, err, tc.want)
		}
		if _, _, err := ReadLocked(context.Background(), tc.path, 0o644); !errors.Is(err, tc.want) {
			t.Errorf("ReadLocked(%s) = %v, want %v", tc.path, err, tc.want)
		}
	}
	if f, err := Open(file); err != nil {
		t.Errorf("Open(regular file) = %v", err)
	} else {
		f.Close()
	}

	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, MaxDocument+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadDoc(big); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadDoc(oversized) = %v, want ErrTooLarge", err)
	}
	if err := os.Truncate(big, MaxDocument); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadDoc(big); err != nil {
		t.Errorf("ReadDoc(MaxDocument bytes) = %v", err)
	}
}

// Below a confined root, a file reached through a directory that is a
// symbolic link is neither opened, nor locked, nor replaced, and nothing is
// written where the link points.
func TestConfinedWritesStayInside(t *testing.T) {
	base := t.TempDir()
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	Confine(root)
	if err := os.Symlink(outside, filepath.Join(root, "pending")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "pending", "a.json")
	if err := WriteAtomic(path, []byte("{}"), 0o644, false, nil); !errors.Is(err, ErrLink) {
		t.Errorf("WriteAtomic through a linked directory = %v, want ErrLink", err)
	}
	if _, err := Lock(context.Background(), filepath.Join(root, "pending", ".lock"), 0o600); !errors.Is(err, ErrLink) {
		t.Errorf("Lock through a linked directory = %v, want ErrLink", err)
	}
	if _, err := NewAppender(path, 0o644).Write(context.Background(), []byte("{}"), AppendOptions{}); !errors.Is(err, ErrLink) {
		t.Errorf("append through a linked directory = %v, want ErrLink", err)
	}
	if err := CheckDir(filepath.Join(root, "pending")); !errors.Is(err, ErrLink) {
		t.Errorf("CheckDir(linked directory) = %v, want ErrLink", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("written outside the root: %v", entries)
	}
	if err := os.MkdirAll(filepath.Join(root, "real", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(filepath.Join(root, "real", "sub", "a.json"), []byte("{}"), 0o644, false, nil); err != nil {
		t.Errorf("WriteAtomic through real directories = %v", err)
	}
}

// A JSONL line longer than MaxLine is reported and passed over, and the
// lines around it still read; a regular file's size bounds nothing else.
func TestLineReaderBoundsALine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chat.jsonl")
	data := []byte("{\"id\":\"a\"}\n{\"x\":\"")
	data = append(data, make([]byte, MaxLine)...)
	data = append(data, "\"}\n{\"id\":\"b\"}\n"...)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	recs, bad, tail, err := ReadAll(path)
	if err != nil || tail != 0 {
		t.Fatalf("ReadAll = %v, tail %d", err, tail)
	}
	if len(recs) != 2 || string(recs[1].Data) != `{"id":"b"}` || recs[1].Line != 3 || recs[1].Offset != int64(len(data)-11) {
		t.Errorf("records = %+v", recs)
	}
	if len(bad) != 1 || bad[0].Line != 2 || !errors.Is(bad[0], ErrLineTooLong) {
		t.Errorf("bad = %v, want line 2 too long", bad)
	}
	if found, keep := Scan(data, InvalidLine); len(found) != 1 || found[0].Line != 2 || len(keep) != 2 {
		t.Errorf("Scan: %d bad, %d kept; want line 2 bad, 2 kept", len(found), len(keep))
	}
}
