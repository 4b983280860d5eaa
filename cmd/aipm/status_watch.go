package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"aipm/fsstore"
	"aipm/fsstore/storage"
	"aipm/internal/table"
)

// watchStatus is the status section of aipm watch: the watcher (nil when
// none runs) and the agent processes it started (runs/).
type watchStatus struct {
	Running   bool          `json:"running"`
	PID       int           `json:"pid,omitempty"`
	StartedAt time.Time     `json:"startedAt,omitzero"`
	Processes []fsstore.Run `json:"agentProcesses"`
}

func collectWatch(_ context.Context, store *fsstore.Store, _ *storage.Config, r *statusReport) error {
	info, err := store.RunningWatcher()
	if err != nil {
		return err
	}
	w := &watchStatus{Processes: []fsstore.Run{}}
	if info != nil {
		w.Running, w.PID, w.StartedAt = true, info.PID, info.StartedAt
	}
	runs, err := store.Runs().List()
	if err != nil {
		return err
	}
	for _, run := range runs {
		if run.Alive() {
			w.Processes = append(w.Processes, run)
		}
	}
	r.Watch = w
	return nil
}

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
