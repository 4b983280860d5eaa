package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"os"
	"testing"
)

// TestModes: the files and directories of a project have the modes of
// DESIGN section 14, credentials and sessions private to the user.
func TestModes(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	if _, err := s.AddAgent(ctx, NewAgent{ID: "bob", Type: storage.AgentAI}); err != nil {
		t.Fatal(err)
	}
	chat, _ := s.files.ChatPath("bob")
	if err := s.files.AppendJSONL(ctx, chat, map[string]string{"id": storage.NewID(storage.PrefixMessage), "senderId": "alice"}); err != nil {
		t.Fatal(err)
	}
	ses, _ := s.files.DocPath(storage.Sessions, storage.NewID(storage.PrefixSession))
	if err := s.files.WriteDoc(ses, map[string]string{}, storage.ModePrivateFile); err != nil {
		t.Fatal(err)
	}
	passkey, _ := s.files.PasskeyPath("bob")
	agentDir, _ := s.files.AgentDir("bob")
	for _, tc := range []struct {
		path string
		want os.FileMode
	}{
		{s.files.Root(), 0o755 | os.ModeDir},
		{s.files.ConfigPath(), 0o644},
		{agentDir, 0o755 | os.ModeDir},
		{chat, 0o644},
		{passkey, 0o600},
		{s.files.CollectionDir(storage.Sessions), 0o700 | os.ModeDir},
		{ses, 0o600},
	} {
		fi, err := os.Stat(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != tc.want {
			t.Errorf("%s: mode %v, want %v", s.files.Rel(tc.path), fi.Mode(), tc.want)
		}
	}
}
