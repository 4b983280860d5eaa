package fsstore

import (
	"context"
	"os"
	"testing"
)

// The denials of one client run are taken once, in order, and are gone
// after; another run's stay; an id that is not a run's is refused.
func TestDenialsTakenOnce(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	run, other := NewID(PrefixRun), NewID(PrefixRun)
	for _, d := range []Denial{{ToolUseID: "toolu_1", Tool: "Bash", Why: DeniedInterrupt}, {ToolUseID: "toolu_2", Tool: "Write", Why: DeniedLease, Holder: "bob", Path: "src/x.go"}} {
		if err := s.Runs().RecordDenial(ctx, "coder", run, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Runs().RecordDenial(ctx, "coder", other, Denial{Tool: "Edit", Why: DeniedLease}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Runs().TakeDenials("coder", run)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ToolUseID != "toolu_1" || got[1].Holder != "bob" || got[1].At.IsZero() {
		t.Fatalf("taken %+v, want the two denials in order", got)
	}
	if again, err := s.Runs().TakeDenials("coder", run); err != nil || len(again) != 0 {
		t.Fatalf("taken again: %+v, %v; want none", again, err)
	}
	if kept, _ := s.Runs().TakeDenials("coder", other); len(kept) != 1 {
		t.Fatalf("the other run's denials: %+v, want one", kept)
	}
	if err := s.Runs().RecordDenial(ctx, "coder", "../../x", Denial{Tool: "Bash"}); err == nil {
		t.Fatal("a launch id that is not a run id was taken")
	}
	if _, err := os.Stat(s.files.Root() + "/x"); err == nil {
		t.Fatal("a path outside logs/ was written")
	}
}
