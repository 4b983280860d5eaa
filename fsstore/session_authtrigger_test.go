package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"testing"
	"time"
)

// Authenticate takes a trigger only once its session exists, and a trigger
// is not written for an agent and purpose with a live session: a watcher
// pass in between, or one that looked at the sessions before the session
// existed, leaves no trigger behind (which would later expire with a false
// "nobody took the trigger" or start a second process; issue 21, item 15).
func TestAuthenticateTakesTriggerAfterSession(t *testing.T) {
	s, cfg := newConvStore(t)
	ctx := context.Background()
	key := mustPasskey(t, s, "b")
	trigger := Trigger{Agent: "b", Purpose: storage.PurposeChat, Reason: "get_pending_messages"}
	watcherPass := func(agent, purpose string) { // reactTriggers' check and write
		live, err := s.LiveSessions(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		for _, ses := range live {
			if ses.Agent == agent && ses.Purpose == purpose {
				return
			}
		}
		if _, err := s.Triggers().Add(ctx, trigger); err != nil {
			t.Fatal(err)
		}
	}
	testHookAuthChosen = watcherPass
	t.Cleanup(func() { testHookAuthChosen = nil })
	for _, requested := range []string{"", storage.PurposeChat} {
		if err := s.Triggers().Write(ctx, trigger); err != nil {
			t.Fatal(err)
		}
		ses, _, err := s.Authenticate(ctx, cfg, "b", key, "", requested)
		if err != nil || ses.Purpose != storage.PurposeChat {
			t.Fatalf("authenticate %q: %+v, %v", requested, ses, err)
		}
		if pending, _ := s.Triggers().Pending(); len(pending) != 0 {
			t.Fatalf("authenticate %q: a watcher pass in between left the trigger %+v", requested, pending)
		}
		// A watcher whose look at the sessions predates this one.
		if wrote, err := s.Triggers().Add(ctx, trigger); err != nil || wrote {
			t.Fatalf("a trigger for b's live chat session was written (%v, %v)", wrote, err)
		}
	}
}
