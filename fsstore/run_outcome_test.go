package fsstore

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecordOutcomeTellsOnce: a problem reaches the agent's human once,
// the same problem again (a restart that fails the same way) is not told
// twice, a new kind of problem is, a run that worked starts over; and the
// first problem a run reports stands when the same run reports again.
func TestRecordOutcomeTellsOnce(t *testing.T) {
	s, cfg := testStoreWith(t)
	ctx := context.Background()
	steps := []struct {
		o        Outcome
		told     int    // new messages in lead's inbox
		keptRun  string // the run id the record holds after
		keptWhat string
	}{
		{Outcome{RunID: "run_1", State: OutcomeFailed, Problem: "run 1 failed"}, 1, "run_1", OutcomeFailed},
		{Outcome{RunID: "run_2", State: OutcomeFailed, Problem: "run 2 failed"}, 0, "run_2", OutcomeFailed},
		{Outcome{RunID: "run_3", State: OutcomeNoAuth, Problem: "run 3 never authenticated"}, 1, "run_3", OutcomeNoAuth},
		{Outcome{RunID: "run_4", State: OutcomeRefused, Problem: "run 4 was refused edits"}, 1, "run_4", OutcomeRefused},
		{Outcome{RunID: "run_4", State: OutcomeWorked}, 0, "run_4", OutcomeRefused}, // the launch's refusal stands
		{Outcome{RunID: "run_5", State: OutcomeWorked}, 0, "run_5", OutcomeWorked},
		{Outcome{RunID: "run_6", State: OutcomeFailed, Problem: "run 6 failed"}, 1, "run_6", OutcomeFailed},
	}
	for i, st := range steps {
		st.o.Agent, st.o.Purpose = "coder", PurposeTask
		if _, err := s.Runs().RecordOutcome(ctx, cfg, st.o); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		msgs, _, err := s.Unread(ctx, "lead", 0, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != st.told {
			t.Errorf("step %d (%s %s): lead was told %d time(s), want %d", i, st.o.RunID, st.o.State, len(msgs), st.told)
		}
		for _, m := range msgs {
			if m.Content != st.o.Problem || m.SenderID != SystemSender {
				t.Errorf("step %d: lead got %q from %s, want the problem from the system", i, m.Content, m.SenderID)
			}
		}
		got, ok := s.Runs().outcome("coder", PurposeTask)
		if !ok || got.RunID != st.keptRun || got.State != st.keptWhat {
			t.Errorf("step %d: the record holds %s %s (found %v), want %s %s", i, got.RunID, got.State, ok, st.keptRun, st.keptWhat)
		}
	}
	if _, err := s.Runs().RecordOutcome(ctx, cfg, Outcome{Agent: "coder", Purpose: PurposeTask, State: "exploded"}); err == nil {
		t.Error("an unknown state was recorded")
	}
	list, err := s.Runs().Outcomes()
	if err != nil || len(list) != 1 || list[0].RunID != "run_6" {
		t.Errorf("Outcomes: %+v, %v; want run_6's alone", list, err)
	}
}

// TestLastLogLine: the last line with a letter or a digit, without
// terminal escapes or carriage-return redraws, clipped.
func TestLastLogLine(t *testing.T) {
	long := strings.Repeat("x", 500)
	for _, c := range []struct{ name, log, want string }{
		{"empty", "", ""},
		{"plain", "starting\nfailed: no network\n", "failed: no network"},
		{"trailing blank and punctuation lines", "the cause\n\n  ---  \n...\n", "the cause"},
		{"colours", "\x1b[31mError:\x1b[0m Invalid API key\x1b[K\n", "Error: Invalid API key"},
		{"a spinner redrawn with CR", "⠋ Reconnecting 1/5\r⠙ Reconnecting 2/5\r\n", "⠙ Reconnecting 2/5"},
		{"clipped", long + "\n", strings.Repeat("x", maxLogLine-1) + "…"},
		{"an OSC title", "\x1b]0;claude\x07done\n", "done"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "run.log")
			if err := os.WriteFile(path, []byte(c.log), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := LastLogLine(path); got != c.want {
				t.Errorf("LastLogLine(%q) = %q, want %q", c.log, got, c.want)
			}
		})
	}
	if got := LastLogLine(filepath.Join(t.TempDir(), "none.log")); got != "" {
		t.Errorf("a missing log: %q", got)
	}
}
