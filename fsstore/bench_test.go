package fsstore

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkAppend compares the locked, checked append (impl=aipm) with the
// raw floor: a bare O_APPEND write and fsync on an already open descriptor
// (impl=floor), in the same run and on the same filesystem.
//
//	go test -run '^$' -bench Append -count 5 ./fsstore
func BenchmarkAppend(b *testing.B) {
	line := []byte(`{"id":"msg_01M7YZWACRA0328GMTHNDHB18Z","senderId":"alice","content":"hello, this is a typical chat line of moderate length","createdAt":"2026-11-21T12:00:00.123456Z"}`)
	for _, durable := range []bool{true, false} {
		sync := map[bool]string{true: "fsync", false: "nosync"}[durable]
		b.Run("impl=floor/"+sync, func(b *testing.B) {
			f, err := os.OpenFile(filepath.Join(b.TempDir(), "floor.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			buf := append(append([]byte{}, line...), '\n')
			for b.Loop() {
				if _, err := f.Write(buf); err != nil {
					b.Fatal(err)
				}
				if durable {
					if err := f.Sync(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run("impl=aipm/"+sync, func(b *testing.B) {
			s, err := Init(b.TempDir(), "bench")
			if err != nil {
				b.Fatal(err)
			}
			s.files.Durable.Store(durable)
			path := filepath.Join(s.files.Root(), "agents", "a", "chat.jsonl")
			ctx := context.Background()
			for b.Loop() {
				if err := s.files.AppendLine(ctx, path, line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
