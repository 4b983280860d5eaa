package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
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

// statusReport is the report (status.Collect) as the tables show it.
type statusReport struct {
	*status.Report
	// short shows ids in the tables (table.Shortener).
	short func(string) string
}

// statusSections print the report's parts, in order; status.Collect
// fills them.
var statusSections = []func(e *env, w io.Writer, r *statusReport) error{
	printAgents, printTasks, printTriggers, printConversations, printDelegations, printWatch, printLeases,
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
	e, r := o.e, &statusReport{Report: report}
	switch {
	case o.JSON && o.Watch:
		return writeJSONLine(e.stdout, report)
	case o.JSON:
		return writeJSON(e.stdout, report)
	}
	if r.short, err = table.Shortener(store.IDs, fsstore.Tasks, fsstore.Conversations, fsstore.Delegations); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	var b strings.Builder
	if o.Watch && table.IsTerminal(e.stdout) {
		b.WriteString("\x1b[H\x1b[2J")
	}
	fmt.Fprintf(&b, "project %s, %s\n", r.Project, e.timeText(time.Now()))
	for _, print := range statusSections {
		b.WriteString("\n")
		if err := print(e, &b, r); err != nil {
			return err
		}
	}
	_, err = io.WriteString(e.stdout, b.String())
	return err
}

func printAgents(e *env, w io.Writer, r *statusReport) error {
	if len(r.Agents) == 0 {
		_, err := fmt.Fprintln(w, "no agents: add one with aipm agent add ID --type ai|human")
		return err
	}
	t := &table.Table{Header: []string{"AGENT", "TYPE", "SESSIONS", "UNREAD", "NOTIFICATIONS"}}
	for _, a := range r.Agents {
		var ses []string
		for _, s := range a.Sessions {
			one := s.Purpose
			if s.TaskID != "" {
				one += " (" + r.short(s.TaskID) + ")"
			}
			if s.SSHClient != "" {
				one += " via ssh from " + s.SSHClient
			}
			ses = append(ses, one)
		}
		notes := fmt.Sprint(a.UnreadNotifications)
		if a.Type == fsstore.AgentHuman {
			notes = "-"
		}
		t.Add(a.ID, a.Type, dash(strings.Join(ses, ", ")), fmt.Sprint(a.UnreadMessages), notes)
	}
	if err := t.Print(w, e.colour, e.width); err != nil {
		return err
	}
	return printUnseen(e, w, r)
}

// printUnseen flags the messages that waited unseen past unsurfaced_after,
// and says why (the receiver's state).
func printUnseen(e *env, w io.Writer, r *statusReport) error {
	for _, a := range r.Agents {
		u := a.Unseen
		if u == nil {
			continue
		}
		noun := "messages"
		if u.Count == 1 {
			noun = "message"
		}
		oldest := ""
		if at, err := time.Parse(time.RFC3339Nano, u.Oldest.CreatedAt); err == nil {
			oldest = fmt.Sprintf(" (oldest from %s, %s)", u.Oldest.SenderID, e.age(at))
		}
		if _, err := fmt.Fprintf(w, "! %d %s to %s not seen%s: %s\n", u.Count, noun, a.ID, oldest, u.Note); err != nil {
			return err
		}
	}
	return nil
}

func printTasks(e *env, w io.Writer, r *statusReport) error {
	t := &table.Table{Header: []string{"TASKS", "COUNT"}, Style: func(col int, cell string) string {
		if col == 0 {
			return statusStyle(cell)
		}
		return ""
	}}
	for _, s := range fsstore.Statuses {
		t.Add(s, fmt.Sprint(r.Tasks[s]))
	}
	for _, s := range slices.Sorted(maps.Keys(r.Tasks)) {
		if fsstore.CheckStatus(s) != nil {
			t.Add(s+" (invalid: not a status, see aipm doctor)", fmt.Sprint(r.Tasks[s]))
		}
	}
	if r.HandEdits > 0 {
		t.Add("status edited by hand, not allowed (see aipm doctor)", fmt.Sprint(r.HandEdits))
	}
	if r.Pending > 0 {
		t.Add("pending approval", fmt.Sprint(r.Pending))
	}
	return t.Print(w, e.colour, e.width)
}

func printTriggers(e *env, w io.Writer, r *statusReport) error {
	if len(r.Triggers) == 0 {
		_, err := fmt.Fprintln(w, "no pending triggers")
		return err
	}
	t := &table.Table{Header: []string{"PENDING TRIGGER", "TASK", "SINCE", "REASON"}, Cut: 3}
	for _, tr := range r.Triggers {
		t.Add(tr.Agent+"."+tr.Purpose, dash(r.short(tr.TaskID)), e.age(tr.CreatedAt), visible(tr.Reason))
	}
	return t.Print(w, e.colour, e.width)
}

func printConversations(e *env, w io.Writer, r *statusReport) error {
	if len(r.Conversations) == 0 {
		_, err := fmt.Fprintln(w, "no open conversations")
		return err
	}
	return conversationTable(r.Conversations, r.short).Print(w, e.colour, e.width)
}

func printDelegations(e *env, w io.Writer, r *statusReport) error {
	if len(r.Delegations) == 0 {
		_, err := fmt.Fprintln(w, "no open delegations")
		return err
	}
	return delegationTable(r.Delegations, false, r.short).Print(w, e.colour, e.width)
}

func printLeases(e *env, w io.Writer, r *statusReport) error {
	if len(r.Leases) == 0 {
		_, err := fmt.Fprintln(w, "no file leases")
		return err
	}
	if err := leaseTable(r.Leases).Print(w, e.colour, e.width); err != nil {
		return err
	}
	for _, c := range r.LeaseConflicts {
		if _, err := fmt.Fprintf(w, "conflict: %s's lease on %s and %s's on %s cannot both hold (leases.json was edited by hand): end one with aipm leases break\n",
			visible(c.A.Holder), visible(c.PathA), visible(c.B.Holder), visible(c.PathB)); err != nil {
			return err
		}
	}
	return nil
}
