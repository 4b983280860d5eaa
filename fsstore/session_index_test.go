package fsstore

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"aipm/fsstore/internal/storage"
	"aipm/internal/testenv"
)

// authenticate reads its own agent's sessions and no one else's: another
// agent's session file that would block whoever opens it (a FIFO) or that
// is damaged is left alone, another agent's expired session is left to the
// full sweep, and the agent's own expired session is swept.
func TestAuthenticateReadsOnlyOwnSessions(t *testing.T) {
	s, cfg := newConvStore(t)
	keyA, keyB := mustPasskey(t, s, "a"), mustPasskey(t, s, "b")

	staleB := mustAuthenticate(t, s, cfg, "b", keyB, storage.PurposeChat)
	expireSession(t, s, staleB)
	staleA := mustAuthenticate(t, s, cfg, "a", keyA, storage.PurposeChat)
	expireSession(t, s, staleA)

	// b's index names two more documents: one that blocks any reader, one damaged.
	fifoPath, damaged, damagedPath := addBlockingAndDamagedSessions(t, s, "b")

	ses := authenticateUnblocked(t, s, cfg, "a", keyA, fifoPath)
	if ses.Agent != "a" || ses.Purpose != storage.PurposeChat {
		t.Fatalf("session: %+v", ses)
	}
	if sessionExists(s, staleA) {
		t.Error("a's own expired session was not swept")
	}
	if got, _ := s.agentSessionIDs("a"); !slices.Equal(got, []string{ses.ID}) {
		t.Errorf("a's index: %v, want only %s", got, ses.ID)
	}
	if data, err := os.ReadFile(damagedPath); err != nil || string(data) != "{ damaged" {
		t.Errorf("another agent's damaged session file was touched: %q %v", data, err)
	}
	if !sessionExists(s, staleB) {
		t.Error("authenticate of a swept b's expired session: that is the full sweep's job")
	}

	// The full sweep (the watcher's pass) ends everyone's stale sessions
	// and drops them from their agents' indexes.
	if err := os.Remove(fifoPath); err != nil {
		t.Fatal(err)
	}
	wantFullSweep(t, s, staleB, damaged)
}

// mustAuthenticate authenticates agent for purpose.
func mustAuthenticate(t *testing.T, s *Store, cfg *storage.Config, agent, key, purpose string) Session {
	t.Helper()
	ses, _, err := s.Authenticate(context.Background(), cfg, agent, key, "", purpose)
	if err != nil {
		t.Fatalf("authenticate %s: %v", agent, err)
	}
	return ses
}

// expireSession makes ses's document say it was last seen two idle
// timeouts ago.
func expireSession(t *testing.T, s *Store, ses Session) {
	t.Helper()
	path, _ := s.files.DocPath(storage.Sessions, ses.ID)
	if _, err := storage.UpdateDoc(context.Background(), s.files, path, storage.ModePrivateFile, func(doc *Session, _ bool) error {
		doc.LastSeenAt = doc.LastSeenAt.Add(-2 * doc.Idle.Duration)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// sessionExists says whether ses's document is there.
func sessionExists(s *Store, ses Session) bool {
	path, _ := s.files.DocPath(storage.Sessions, ses.ID)
	_, err := os.Stat(path)
	return err == nil
}

// addBlockingAndDamagedSessions adds two session documents to agent's
// index: a FIFO (whoever opens it blocks) and a damaged one. It returns
// the FIFO's path and the damaged document's id and path.
func addBlockingAndDamagedSessions(t *testing.T, s *Store, agent string) (fifoPath, damaged, damagedPath string) {
	t.Helper()
	fifo, damaged := storage.NewID(storage.PrefixSession), storage.NewID(storage.PrefixSession)
	fifoPath, _ = s.files.DocPath(storage.Sessions, fifo)
	damagedPath, _ = s.files.DocPath(storage.Sessions, damaged)
	if err := syscall.Mkfifo(fifoPath, 0o600); err != nil {
		testenv.SkipMissing(t, "FIFOs (mkfifo: "+err.Error()+")")
	}
	if err := os.WriteFile(damagedPath, []byte("{ damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	ids, err := s.agentSessionIDs(agent)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.setAgentSessionIDs(agent, append(ids, fifo, damaged)); err != nil {
		t.Fatal(err)
	}
	return fifoPath, damaged, damagedPath
}

// authenticateUnblocked authenticates agent, failing if that takes a
// minute: it opened the FIFO at fifoPath (which it then unblocks).
func authenticateUnblocked(t *testing.T, s *Store, cfg *storage.Config, agent, key, fifoPath string) Session {
	t.Helper()
	done := make(chan Session, 1)
	go func() { done <- mustAuthenticate(t, s, cfg, agent, key, storage.PurposeChat) }()
	var ses Session
	select {
	case ses = <-done:
	case <-time.After(time.Minute):
		// Let the blocked reader go before failing.
		if f, err := os.OpenFile(fifoPath, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		<-done
		t.Fatal("authenticate opened another agent's session file")
	}
	return ses
}

// wantFullSweep runs the full sweep: it ends b's expired session staleB
// and drops it from b's index, where the damaged id stays (for doctor).
func wantFullSweep(t *testing.T, s *Store, staleB Session, damaged string) {
	t.Helper()
	if err := s.SweepSessions(context.Background()); err != nil {
		t.Fatal(err)
	}
	if sessionExists(s, staleB) {
		t.Error("the full sweep left b's expired session")
	}
	if got, _ := s.agentSessionIDs("b"); slices.Contains(got, staleB.ID) || !slices.Contains(got, damaged) {
		t.Errorf("b's index after the sweep: %v (damaged %s stays, for doctor)", got, damaged)
	}
}

// A project without sessions/by-agent/ (an older aipm's, or removed) gets
// it rebuilt from the session documents: a live session is still found and
// replaced, never doubled.
func TestSessionIndexRebuilt(t *testing.T) {
	s, cfg := newConvStore(t)
	ctx := context.Background()
	key := mustPasskey(t, s, "a")
	first, _, err := s.Authenticate(ctx, cfg, "a", key, "", storage.PurposeChat)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Authenticate(ctx, cfg, "b", mustPasskey(t, s, "b"), "", storage.PurposeChat); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(s.files.CollectionDir(storage.Sessions), storage.SessionIndexDir)); err != nil {
		t.Fatal(err)
	}
	second, _, err := s.Authenticate(ctx, cfg, "a", key, "", storage.PurposeChat)
	if err != nil {
		t.Fatal(err)
	}
	if old, _ := s.session(first.ID); old.EndReason != endReplaced {
		t.Fatalf("the session the rebuilt index should have found: %+v", old)
	}
	live, err := s.LiveSessions(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var mine []string
	for _, ses := range live {
		if ses.Agent == "a" {
			mine = append(mine, ses.ID)
		}
	}
	if !slices.Equal(mine, []string{second.ID}) {
		t.Fatalf("a's live sessions: %v, want only %s", mine, second.ID)
	}
	if got, _ := s.agentSessionIDs("b"); len(got) != 1 {
		t.Fatalf("b's rebuilt index: %v", got)
	}
	fi, err := os.Stat(filepath.Join(s.files.CollectionDir(storage.Sessions), storage.SessionIndexDir))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("index directory: %v %v, want mode 0700", fi, err)
	}
}

// doctor reports a session document missing from its agent's index (left
// by something that does not keep the index), and --repair adds it.
func TestDoctorSessionIndex(t *testing.T) {
	s, cfg := newConvStore(t)
	ctx := context.Background()
	live, _, err := s.Authenticate(ctx, cfg, "a", mustPasskey(t, s, "a"), "", storage.PurposeChat)
	if err != nil {
		t.Fatal(err)
	}
	stray := live
	stray.ID = storage.NewID(storage.PrefixSession)
	path, _ := s.files.DocPath(storage.Sessions, stray.ID)
	if err := s.files.WriteDoc(path, stray, storage.ModePrivateFile); err != nil {
		t.Fatal(err)
	}
	for _, repair := range []bool{false, true} {
		problems, err := s.Doctor(ctx, repair)
		if err != nil {
			t.Fatal(err)
		}
		if len(problems) != 1 || problems[0].Path != s.files.Rel(path) || problems[0].Repaired != repair {
			t.Fatalf("repair=%v: %v", repair, problems)
		}
	}
	if problems, err := s.Doctor(ctx, false); err != nil || len(problems) != 0 {
		t.Fatalf("after repair: %v %v", problems, err)
	}
	if ids, _ := s.agentSessionIDs("a"); !slices.Equal(ids, []string{live.ID, stray.ID}) {
		t.Fatalf("a's index: %v", ids)
	}
}
