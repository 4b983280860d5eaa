package bench

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSenders: P2's agents are s0 to s(n-1).
func TestSenders(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want []string
	}{
		{0, []string{}},
		{1, []string{"s0"}},
		{3, []string{"s0", "s1", "s2"}},
	} {
		if got := senders(tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("senders(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// TestDualWrite: the line is appended to each file, which is made if
// missing; a file that cannot be opened is an error.
func TestDualWrite(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	if err := os.WriteFile(in, []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"one\n", "two\n"} {
		if err := dualWrite([]string{in, out}, []byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	for path, want := range map[string]string{in: "before\none\ntwo\n", out: "one\ntwo\n"} {
		if data, err := os.ReadFile(path); err != nil || string(data) != want {
			t.Errorf("%s holds %q (%v), want %q", filepath.Base(path), data, err, want)
		}
	}
	if err := dualWrite([]string{filepath.Join(dir, "no", "such.jsonl")}, []byte("x\n")); err == nil {
		t.Error("dualWrite into a missing directory: no error")
	}
}

// TestFloorUsage: the floors' helpers refuse a wrong command line before
// they read or watch anything.
func TestFloorUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(context.Context, []string, io.Writer) error
		args []string
		want string
	}{
		{"reader, no file", FloorReader, nil, "usage: bench-floor-reader FILE"},
		{"reader, two files", FloorReader, []string{"a", "b"}, "usage: bench-floor-reader FILE"},
		{"writer, two", FloorWriter, []string{"in", "out"}, "usage: bench-floor-writer IN OUT N"},
		{"writer, four", FloorWriter, []string{"in", "out", "1", "2"}, "usage: bench-floor-writer IN OUT N"},
		{"writer, N not a number", FloorWriter, []string{"in", "out", "many"}, "bench-floor-writer: N: "},
		{"server, one", FloorServer, []string{"in"}, "usage: bench-floor-server IN OUT"},
		{"server, three", FloorServer, []string{"in", "out", "x"}, "usage: bench-floor-server IN OUT"},
		{"relay appender, no file", FloorRelayAppend, nil, "usage: bench-floor-relay-append FILE"},
		{"relay appender, two files", FloorRelayAppend, []string{"a", "b"}, "usage: bench-floor-relay-append FILE"},
		{"relay echo, no file", FloorRelayEcho, nil, "usage: bench-floor-relay-echo FILE"},
		{"relay echo, two files", FloorRelayEcho, []string{"a", "b"}, "usage: bench-floor-relay-echo FILE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout strings.Builder
			err := tc.fn(context.Background(), tc.args, &stdout)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want one starting %q", err, tc.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("printed %q", stdout.String())
			}
		})
	}
}
