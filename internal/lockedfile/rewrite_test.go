package lockedfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// RewriteKeeping drops exactly the ranges not kept, keeps what was appended
// after the read, and refuses a file that changed under it.
func TestRewriteKeeping(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		before string // content read
		keep   [][2]int
		change func(t *testing.T, path string)
		want   string
		err    error
	}{
		{name: "drops a bad line", before: "{\"a\":1}\nbad\n{\"b\":2}\n", keep: [][2]int{{0, 8}, {12, 20}},
			want: "{\"a\":1}\n{\"b\":2}\n"},
		{name: "keeps an append made after the read", before: "{\"a\":1}\nbad\n", keep: [][2]int{{0, 8}},
			change: func(t *testing.T, path string) { appendOrFail(t, path, `{"c":3}`) },
			want:   "{\"a\":1}\n{\"c\":3}\n"},
		{name: "drops a torn tail and keeps the append that ended it", before: "{\"a\":1}\n{\"to", keep: [][2]int{{0, 8}},
			change: func(t *testing.T, path string) { appendOrFail(t, path, `{"c":3}`) },
			want:   "{\"a\":1}\n{\"c\":3}\n"},
		{name: "refuses a replaced file", before: "{\"a\":1}\nbad\n", keep: [][2]int{{0, 8}},
			change: func(t *testing.T, path string) {
				writeFile(t, path+".new", "{\"a\":1}\nbad\n")
				if err := os.Rename(path+".new", path); err != nil {
					t.Fatal(err)
				}
			},
			want: "{\"a\":1}\nbad\n", err: ErrChanged},
		{name: "refuses a rewritten prefix", before: "{\"a\":1}\nbad\n", keep: [][2]int{{0, 8}},
			change: func(t *testing.T, path string) {
				if err := os.WriteFile(path, []byte("{\"z\":9}\nbad\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			want: "{\"z\":9}\nbad\n", err: ErrChanged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log.jsonl")
			writeFile(t, path, tt.before)
			data, held, err := ReadLocked(ctx, path, 0o644)
			if err != nil || string(data) != tt.before {
				t.Fatalf("ReadLocked: %q, %v", data, err)
			}
			if tt.change != nil {
				tt.change(t, path)
			}
			err = RewriteKeeping(ctx, path, held, data, tt.keep, false)
			if !errors.Is(err, tt.err) {
				t.Fatalf("RewriteKeeping: %v, want %v", err, tt.err)
			}
			if got, _ := os.ReadFile(path); string(got) != tt.want {
				t.Fatalf("file after: %q, want %q", got, tt.want)
			}
		})
	}
}

func appendOrFail(t *testing.T, path, line string) {
	t.Helper()
	if err := appendOnce(context.Background(), path, []byte(line), AppendOptions{}); err != nil {
		t.Fatal(err)
	}
}
