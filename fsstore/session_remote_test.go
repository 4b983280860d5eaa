package fsstore

import (
	"aipm/fsstore/storage"
	"context"
	"testing"
	"time"
)

// TestRunOwnsRemoteSessions: a run ends a session opened under sshd with
// no run id only when its command runs ssh, the session is of its agent and
// purpose and was opened after it started, and the run ended while the
// watcher saw it (not a stale record found at the next claim).
func TestRunOwnsRemoteSessions(t *testing.T) {
	ssh := []string{"ssh", "-T", "hostB", "claude", "-p", "work"}
	for _, tc := range []struct {
		name    string
		command []string
		started time.Duration // the run's start, from the session's opening
		purpose string
		stale   bool
		ends    bool
	}{
		{"ssh command, session opened after its start", ssh, -time.Minute, storage.PurposeChat, false, true},
		{"ssh inside a shell command", []string{"sh", "-c", "exec ssh hostB claude"}, -time.Minute, storage.PurposeChat, false, true},
		{"a local command", []string{"claude", "-p", "work"}, -time.Minute, storage.PurposeChat, false, false},
		{"session opened before the run", ssh, time.Minute, storage.PurposeChat, false, false},
		{"another purpose", ssh, -time.Minute, storage.PurposeTask, false, false},
		{"a stale record", ssh, -time.Hour, storage.PurposeChat, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, cfg := leadAndCoder(t)
			ctx := context.Background()
			t.Setenv(envSSHConnection, "192.0.2.7 50000 192.0.2.1 22")
			t.Setenv(EnvRunID, "")
			ses, _, err := s.Authenticate(ctx, cfg, "coder", mustPasskey(t, s, "coder"), "", storage.PurposeChat)
			if err != nil {
				t.Fatal(err)
			}
			if ses.SSHClient != "192.0.2.7:50000" {
				t.Fatalf("the session's ssh client is %q", ses.SSHClient)
			}
			run := Run{ID: "run_1", Agent: "coder", Purpose: tc.purpose, Command: tc.command, StartedAt: ses.CreatedAt.Add(tc.started)}
			end := s.Runs().endSessions
			if tc.stale {
				end = s.Runs().EndStaleSessions
			}
			if err := end(ctx, run); err != nil {
				t.Fatal(err)
			}
			now, err := s.Session(ses.ID)
			if err != nil {
				t.Fatal(err)
			}
			if ended := now.EndReason != ""; ended != tc.ends {
				t.Errorf("session ended: %v (%q), want %v", ended, now.EndReason, tc.ends)
			}
		})
	}
}

// TestServeManySessionsOwnNoEnvironment: sessions opened by a process that
// serves many agents (aipm serve --http) take neither the run id nor the
// ssh client of its environment.
func TestServeManySessionsOwnNoEnvironment(t *testing.T) {
	s, cfg := leadAndCoder(t)
	t.Setenv(envSSHConnection, "192.0.2.7 50000 192.0.2.1 22")
	t.Setenv(EnvRunID, "run_of_the_shell")
	s.ServeMany()
	ses, _, err := s.Authenticate(context.Background(), cfg, "coder", mustPasskey(t, s, "coder"), "", storage.PurposeChat)
	if err != nil {
		t.Fatal(err)
	}
	if ses.SSHClient != "" || ses.RunID != "" {
		t.Errorf("a session of a many-agent server took ssh client %q and run %q from its environment", ses.SSHClient, ses.RunID)
	}
}
