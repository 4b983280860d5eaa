package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"aipm/fsstore"
	"aipm/internal/status"
	"aipm/internal/table"
)

func printWatch(e *env, w io.Writer, r *statusReport) error {
	s := r.Watch
	if !s.Running {
		fmt.Fprintln(w, "watcher          not running: start it with aipm watch (agents with a command are started only by it)")
	} else {
		up := time.Since(s.StartedAt).Round(time.Second)
		fmt.Fprintf(w, "watcher          pid %d, up %s (since %s)\n", s.PID, up, e.timeText(s.StartedAt))
	}
	if len(s.Processes) == 0 {
		fmt.Fprintln(w, "no agent processes running")
	} else {
		t := &table.Table{Header: []string{"AGENT PROCESS", "PID", "STARTED", "REASON", "ITS LOG ENDS"}, Cut: 4}
		for _, run := range s.Processes {
			t.Add(run.Agent+"."+run.Purpose, fmt.Sprint(run.PID), e.age(run.StartedAt), visible(run.Reason), visible(run.LogLine))
		}
		if err := t.Print(w, e.colour, e.width); err != nil {
			return err
		}
	}
	return printLastRuns(e, w, s)
}

// printLastRuns is how each agent's last run ended, then every problem
// in full (the sentence its human was told, with the fix).
func printLastRuns(e *env, w io.Writer, s *status.Watch) error {
	if len(s.LastRuns) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	t := &table.Table{Header: []string{"LAST RUN", "OUTCOME", "ENDED"}}
	var problems []fsstore.Outcome
	for _, o := range s.LastRuns {
		t.Add(o.Agent+"."+o.Purpose, strings.ReplaceAll(o.State, "_", " "), e.age(o.EndedAt))
		if o.Failed() {
			problems = append(problems, o)
		}
	}
	if err := t.Print(w, e.colour, e.width); err != nil {
		return err
	}
	for _, o := range problems {
		fmt.Fprintf(w, "  %s.%s: %s\n", o.Agent, o.Purpose, visible(o.Problem))
	}
	return nil
}
