package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"aipm/fsstore"
	"aipm/internal/status"
	"aipm/internal/table"
	"aipm/wake"
)

// statusRecheck is how often status --watch redraws without a file change:
// sessions expire by the clock, not by a write.
const statusRecheck = 30 * time.Second

type statusOptions struct {
	e     *env
	JSON  bool
	Watch bool
}

func newCmdStatus(e *env, runF func(*statusOptions) error) *cobra.Command {
	o := &statusOptions{e: e}
	c := &cobra.Command{
		Use:   "status [--watch]",
		Short: "The project at a glance: agents online, unread counts, tasks, triggers",
		Long: `Show the project at a glance: each agent with its live sessions (by purpose)
and its unread messages and notifications, the tasks by status, the pending
triggers (work waiting for an agent's session to start), the open
conversations and delegations, the watcher, and the live file leases (with
any two that cannot both hold, which only a hand edit of leases.json makes).
A task file that cannot be read is counted nowhere and named in a warning on
stderr, as aipm task list names it (unreadableTasks in the JSON).

--watch redraws whenever a file under .ai-pm/ changes (woken by fsnotify, as
the MCP server is), until Ctrl-C. With --json it prints one compact JSON
report per line.`,
		Example: "  aipm status\n  aipm status --watch\n  aipm status --json",
		Args:    argsNone,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(o)
			}
			return statusRun(cmd.Context(), o)
		},
	}
	c.Flags().BoolVar(&o.JSON, "json", false, "print the report as JSON")
	c.Flags().BoolVarP(&o.Watch, "watch", "w", false, "redraw on every change until interrupted")
	return c
}

func statusRun(ctx context.Context, o *statusOptions) error {
	store, err := o.e.openStore()
	if err != nil {
		return err
	}
	if !o.Watch {
		return o.draw(ctx, store)
	}
	hub := wake.New()
	for {
		// Subscribe before reading, so a change made while we read wakes us.
		sub, err := hub.Subscribe(store.WatchedDirs()...)
		if err != nil {
			return fmt.Errorf("status --watch: %w", err)
		}
		if err := o.draw(ctx, store); err != nil {
			sub.Close()
			return err
		}
		_, err = sub.Wait(ctx, statusRecheck)
		sub.Close()
		if err != nil {
			return nil // interrupted: how --watch ends (mainExit exits 130)
		}
	}
}

// draw collects the report and prints it once (cleared first on a
// terminal when watching).
func (o *statusOptions) draw(ctx context.Context, store *fsstore.Store) error {
	cfg, err := store.LoadConfig()
	if err != nil {
		return err
	}
	o.e.warnConfig(cfg)
	report, err := status.Collect(ctx, store, cfg)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	warnSkipped(o.e, report.UnreadableTasks)
	e := o.e
	switch {
	case o.JSON && o.Watch:
		return writeJSONLine(e.stdout, report)
	case o.JSON:
		return writeJSON(e.stdout, report)
	}
	short, err := table.Shortener(store.IDs, fsstore.Tasks, fsstore.Conversations, fsstore.Delegations)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	var b strings.Builder
	if o.Watch && table.IsTerminal(e.stdout) {
		b.WriteString("\x1b[H\x1b[2J")
	}
	if err := status.Print(&b, report, status.View{Colour: e.colour, Width: e.width, Short: short, Age: e.age, Time: e.timeText}); err != nil {
		return err
	}
	_, err = io.WriteString(e.stdout, b.String())
	return err
}
