package fsstore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"aipm/fsstore/internal/storage"
)

// How a run ended (Outcome.State). Only OutcomeWorked and OutcomeStopped
// carry no problem.
const (
	OutcomeWorked  = "worked"  // it took its work and exited
	OutcomeStopped = "stopped" // aipm watch stopped it as it stopped itself
	// OutcomeRefused: its client refused tool calls it needed (its own
	// permission checks), so its work may be incomplete.
	OutcomeRefused = "refused"
	// OutcomeNoWork: it exited without authenticating, so it did none of
	// the work it was started for.
	OutcomeNoWork = "exited_without_working"
	// OutcomeNoAuth: it had not authenticated within [defaults]
	// authenticate_within, and aipm watch stopped it.
	OutcomeNoAuth = "never_authenticated"
	// OutcomeFailed: it could not start, or exited with a failure.
	OutcomeFailed = "failed"
)

// Outcome is runs/outcomes/<agent>.<purpose>.json: how the agent's last
// run of that purpose ended, kept after the run's record goes, so that
// aipm status, the board and aipm watch --until-idle can say it.
type Outcome struct {
	RunID   string `json:"runId,omitempty"`
	Agent   string `json:"agentId"`
	Purpose string `json:"purpose"`
	State   string `json:"state"`
	// Problem is what went wrong and what to do, in one sentence; "" for
	// a run that worked or was stopped.
	Problem string `json:"problem,omitempty"`
	// LogLine is the last meaningful line of the run's log (LastLogLine).
	LogLine   string    `json:"logLine,omitempty"`
	Log       string    `json:"log,omitempty"` // the run's log, project-relative
	StartedAt time.Time `json:"startedAt,omitzero"`
	EndedAt   time.Time `json:"endedAt"`
	// Told are the humans Problem was told to: once per kind of problem,
	// not again at every restart that fails the same way.
	Told []string `json:"told,omitempty"`
}

// Failed says whether o is a problem a human should hear of.
func (o Outcome) Failed() bool { return o.Problem != "" }

// RecordOutcome records how a run ended and, when it is a problem the
// agent's humans (Config.TellWhom) have not been told of since its last
// run that worked, tells them in one system message: the run's outcome
// reaches the inbox of the human who can fix it. A run reports its own
// outcome at most once that stands: the first problem recorded for a run
// id is kept when the same run later reports again (aipm launch says its
// client refused edits, then aipm watch sees the exit). It returns the
// outcome as recorded. Who is told is written with the outcome, before
// the messages go: a kill between the two loses the message, never
// repeats it (aipm status still shows the problem).
func (rt RunTable) RecordOutcome(ctx context.Context, cfg *Config, o Outcome) (Outcome, error) {
	s := rt.s
	path, err := s.files.OutcomePath(o.Agent, o.Purpose)
	if err != nil {
		return Outcome{}, err
	}
	if err := storage.CheckEnum("state", o.State, outcomeStates); err != nil {
		return Outcome{}, err
	}
	if o.EndedAt.IsZero() {
		o.EndedAt = time.Now().UTC()
	}
	if err := s.files.MkdirAll(s.files.OutcomesDir()); err != nil {
		return Outcome{}, fmt.Errorf("record outcome: %w", err)
	}
	var tell []string
	got, err := storage.UpdateDoc(ctx, s.files, path, storage.ModeFile, func(doc *Outcome, exists bool) error {
		tell = nil
		prev := *doc
		if exists && o.RunID != "" && prev.RunID == o.RunID && prev.Failed() {
			return storage.ErrNoChange // the run said what went wrong already
		}
		told := exists && prev.Failed() && prev.State == o.State && len(prev.Told) > 0
		*doc = o
		switch {
		case !o.Failed():
		case told:
			doc.Told = prev.Told
		default:
			tell = cfg.TellWhom(o.Agent)
			doc.Told = tell
		}
		return nil
	})
	if err != nil {
		return Outcome{}, fmt.Errorf("record the outcome of %s's %s run: %w", o.Agent, o.Purpose, err)
	}
	var errs []error
	for _, h := range tell {
		if _, err := s.Send(ctx, cfg, OutgoingMessage{From: SystemSender, To: h, Content: got.Problem, Kind: KindSystem}); err != nil {
			errs = append(errs, fmt.Errorf("tell %s: %w", h, err))
		}
	}
	if len(errs) > 0 {
		return got, fmt.Errorf("the outcome of %s's %s run is recorded, but: %v", o.Agent, o.Purpose, errs)
	}
	return got, nil
}

var outcomeStates = []string{OutcomeWorked, OutcomeStopped, OutcomeRefused, OutcomeNoWork, OutcomeNoAuth, OutcomeFailed}

// Outcomes lists the last outcome of every agent and purpose, newest
// first. Unreadable records are skipped.
func (rt RunTable) Outcomes() ([]Outcome, error) {
	s := rt.s
	entries, err := os.ReadDir(s.files.OutcomesDir())
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list run outcomes: %w", err)
	}
	var out []Outcome
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		dot := strings.LastIndexByte(name, '.')
		if !ok || dot <= 0 {
			continue
		}
		agent, purpose := name[:dot], name[dot+1:]
		if o, ok := rt.outcome(agent, purpose); ok {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b Outcome) int { return b.EndedAt.Compare(a.EndedAt) })
	return out, nil
}

// outcome is the last outcome of agent's runs of purpose; ok is false
// when none is recorded (or it cannot be read).
func (rt RunTable) outcome(agent, purpose string) (o Outcome, ok bool) {
	path, err := rt.s.files.OutcomePath(agent, purpose)
	if err != nil {
		return Outcome{}, false
	}
	return o, rt.s.files.ReadDoc(path, &o) == nil
}

// logTail is how much of a run's log LastLogLine reads, from its end.
const logTail = 16 << 10

// maxLogLine bounds the line LastLogLine returns, in runes.
const maxLogLine = 240

// ansiEscape matches a terminal's escape sequences (colours, cursor
// moves), which clients print even into a file; compiled on first use,
// not by every process that links this package (each hook, P8a).
var ansiEscape = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])`)
})

// LastLogLine is the last meaningful line of a run's log (path absolute,
// as Run.Log), as LastLine finds it in the log's last 16 KiB; "" when
// there is none or the log cannot be read.
func LastLogLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > logTail {
		f.Seek(fi.Size()-logTail, io.SeekStart)
	}
	data, _ := io.ReadAll(io.LimitReader(f, logTail))
	return LastLine(data)
}

// LastLine is the last meaningful line of a program's output: the last
// one with a letter or a digit, without terminal escapes, clipped; ""
// when there is none. A client's last words are most often why it
// stopped ("Reconnecting... waiting for network", "claude is not on
// PATH ...").
func LastLine(data []byte) string {
	data = ansiEscape().ReplaceAll(data, nil)
	lines := bytes.FieldsFunc(data, func(r rune) bool { return r == '\n' || r == '\r' })
	for i := len(lines) - 1; i >= 0; i-- {
		line := strings.TrimSpace(strings.ToValidUTF8(string(lines[i]), "?"))
		if strings.IndexFunc(line, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0 {
			continue
		}
		line = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) {
				return ' '
			}
			return r
		}, line)
		if r := []rune(line); len(r) > maxLogLine {
			line = string(r[:maxLogLine-1]) + "…"
		}
		return line
	}
	return ""
}
