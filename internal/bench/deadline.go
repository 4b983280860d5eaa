package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// defaultGrace is how long a measurement whose context ended may take to
// return before the run leaves it behind and goes on.
const defaultGrace = 10 * time.Second

// errDeadline is the cause of a target's context that passed its
// deadline.
type errDeadline struct{ after time.Duration }

func (e errDeadline) Error() string { return fmt.Sprintf("did not finish in %s", e.after) }

// runTarget runs t's measurement on a copy of b with a context of its
// own, which ends at timeout, when a process the measurement watches
// exits before it was stopped (b.fail), or with the run's. Its end kills
// every process the measurement started (b.command), which makes what
// waits on them fail; a measurement that returns an error, or is still
// running b.grace after its context ended (left behind), gives its rows
// not met, each with the reason (notMeasured), and the run goes on.
// Only the run's own end (an interrupt) is an error here.
func (b *bench) runTarget(t target, timeout time.Duration) ([]Row, error) {
	ctx, fail := context.WithCancelCause(b.ctx)
	defer fail(nil)
	deadline := errDeadline{timeout}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, deadline)
	defer cancel()
	tb := *b
	tb.ctx, tb.fail, tb.doing = ctx, fail, &doing{}
	type result struct {
		rows []Row
		err  error
	}
	done := make(chan result, 1)
	go func() {
		rows, err := t.run(&tb)
		done <- result{rows, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-ctx.Done():
		select {
		case res = <-done:
		case <-time.After(b.grace):
			res.err = fmt.Errorf("still running %s after that, left behind; it last was at: %s", b.grace, tb.doing)
		}
	}
	if res.err == nil {
		return res.rows, nil
	}
	if b.ctx.Err() != nil {
		return nil, fmt.Errorf("%s: %w", t.names[0], res.err)
	}
	note := "failed: " + res.err.Error()
	cause := context.Cause(ctx)
	switch {
	case errors.As(cause, new(errDeadline)):
		note = cause.Error() + waitedFor(res.err, cause, tb.doing.String())
	case cause != nil && !strings.Contains(note, cause.Error()):
		note += " (" + cause.Error() + ")"
	}
	b.progress("%s not measured: %s", strings.Join(t.rows, ", "), note)
	return notMeasured(t, note), nil
}

// waitedFor is what a measurement that passed its deadline waited for:
// its error, without the deadline it ended with, and where it was (at)
// when the error does not say it already.
func waitedFor(err, deadline error, at string) string {
	waited := err.Error()
	for _, end := range []string{deadline.Error(), context.DeadlineExceeded.Error()} {
		if waited == end {
			waited = ""
		}
		waited = strings.TrimSuffix(waited, ": "+end)
	}
	switch {
	case waited == "" && at == "":
		return ""
	case waited == "":
		return ": " + at
	case at == "" || strings.Contains(waited, at):
		return ": " + waited
	}
	return ": " + waited + " (at: " + at + ")"
}

// notMeasured are t's rows when its measurement did not give them: not
// met, the reason in the aipm column and as the row's error.
func notMeasured(t target, why string) []Row {
	rows := make([]Row, 0, len(t.rows))
	for _, id := range t.rows {
		rows = append(rows, Row{id: id, what: t.what, aipm: "not measured: " + why, floor: "-", compared: "-", target: "-", err: why})
	}
	return rows
}

// doing is what a measurement last said it was at (its progress, or what
// it waits for): the note of one left behind.
type doing struct {
	mu   sync.Mutex
	what string
}

func (d *doing) set(what string) {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.what = what
	d.mu.Unlock()
}

func (d *doing) String() string {
	if d == nil {
		return ""
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.what
}

// failWith ends the target's context with cause: a process it needs
// exited, and what waits on it must fail now rather than at the deadline.
func (b *bench) failWith(cause error) {
	if b.fail != nil {
		b.fail(cause)
	}
}
