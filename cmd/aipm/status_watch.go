package main

import (
	"fmt"
	"io"
	"time"

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
		return nil
	}
	t := &table.Table{Header: []string{"AGENT PROCESS", "PID", "STARTED", "REASON"}, Cut: 3}
	for _, run := range s.Processes {
		t.Add(run.Agent+"."+run.Purpose, fmt.Sprint(run.PID), e.age(run.StartedAt), visible(run.Reason))
	}
	return t.Print(w, e.colour, e.width)
}
