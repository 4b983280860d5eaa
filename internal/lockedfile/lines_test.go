package lockedfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func idOf(r Record) string { return gjson.GetBytes(r.Data, "id").String() }

func TestLineReader(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name     string
		content  string
		wantIDs  []string
		wantBad  []string
		wantTail int64
	}{
		{"empty", "", nil, nil, 0},
		{"two lines", "{\"id\":\"a\"}\n{\"id\":\"b\"}\n", []string{"a", "b"}, nil, 0},
		{"torn tail", "{\"id\":\"a\"}\n{\"id\":\"b\"", []string{"a"}, nil, 9},
		{"invalid middle", "{\"id\":\"a\"}\nnot json\n{\"id\":\"c\"}\n", []string{"a", "c"}, []string{":2: not a JSON object"}, 0},
		{"broken object", "{\"id\":\"a\"\n{\"id\":\"c\"}\n", []string{"c"}, []string{":1: invalid JSON"}, 0},
		{"blank lines", "\n{\"id\":\"a\"}\n  \n", []string{"a"}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".jsonl")
			os.WriteFile(path, []byte(tc.content), 0o644)
			recs, bad, tail, err := ReadAll(path)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range recs {
				ids = append(ids, idOf(r))
			}
			if strings.Join(ids, ",") != strings.Join(tc.wantIDs, ",") {
				t.Errorf("ids %v, want %v", ids, tc.wantIDs)
			}
			if len(bad) != len(tc.wantBad) {
				t.Fatalf("bad %v, want %v", bad, tc.wantBad)
			}
			for i, b := range bad {
				if !strings.HasPrefix(b.Error(), path+tc.wantBad[i]) {
					t.Errorf("bad[%d] = %q, want prefix %q", i, b, path+tc.wantBad[i])
				}
			}
			if tail != tc.wantTail {
				t.Errorf("tail %d, want %d", tail, tc.wantTail)
			}
		})
	}
}

func FuzzLineReader(f *testing.F) {
	f.Add([]byte("{\"id\":\"a\"}\n{\"id\":\"b\""))
	f.Add([]byte("\n\n{}\nnull\n[1]\n{\"a\":\"\\u0000\"}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "f.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		recs, bad, tail, err := ReadAll(path)
		if err != nil {
			t.Fatal(err)
		}
		var consumed int64
		for _, r := range recs {
			if !json.Valid(r.Data) || bytes.IndexByte(r.Data, '\n') >= 0 {
				t.Fatalf("returned invalid record %q", r.Data)
			}
			if !bytes.Equal(data[r.Offset:r.Offset+int64(len(r.Data))], r.Data) {
				t.Fatalf("record at %d does not match the file", r.Offset)
			}
			consumed = r.End().Offset
		}
		if tail > 0 && bytes.HasSuffix(data, []byte("\n")) {
			t.Fatalf("tail %d reported for a file ending in a newline", tail)
		}
		if consumed > int64(len(data))-tail {
			t.Fatalf("consumed %d of %d with tail %d", consumed, len(data), tail)
		}
		_ = bad
	})
}

// ReadPast on any file from any cursor: no panic, and every record it
// returns is a whole valid line of the file, at its offset.
func FuzzReadPast(f *testing.F) {
	f.Add([]byte("{\"id\":\"a\"}\n{\"id\":\"b\"}\n"), int64(10), "a", "b")
	f.Add([]byte("{\"id\":\"a\"}\nxx\n{\"id\":\"b\""), int64(3), "b", "")
	f.Fuzz(func(t *testing.T, data []byte, offset int64, last, earlier string) {
		path := filepath.Join(t.TempDir(), "f.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(path)
		cur := Cursor{Offset: max(0, offset), Line: 1, Inode: Inode(fi), LastID: last}
		if earlier != "" {
			cur.Earlier = []string{earlier}
		}
		res, err := ReadPast(path, cur, ReadOptions{Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Records {
			if !json.Valid(r.Data) || !bytes.Equal(data[r.Offset:r.Offset+int64(len(r.Data))], r.Data) || data[r.Offset+int64(len(r.Data))] != '\n' {
				t.Fatalf("returned %q at %d, not a line of the file", r.Data, r.Offset)
			}
		}
		if res.Next.Offset > int64(len(data)) || (res.Next.Offset > 0 && data[res.Next.Offset-1] != '\n') {
			t.Fatalf("next cursor at %d is not on a line boundary", res.Next.Offset)
		}
	})
}

// A LineReader sized for a small read still reads lines longer than its
// buffer (the file grew since it was sized) whole.
func TestLineReaderSizedSmall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.jsonl")
	long := `{"id":"a","pad":"` + strings.Repeat("x", 5000) + `"}`
	if err := os.WriteFile(path, []byte(long+"\n"+`{"id":"b"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := newLineReaderFor(f, path, Position{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{long, `{"id":"b"}`} {
		rec, err := r.Next()
		if err != nil || string(rec.Data) != want {
			t.Fatalf("read %d bytes (%v), want %d", len(rec.Data), err, len(want))
		}
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("past the end: %v", err)
	}
}
