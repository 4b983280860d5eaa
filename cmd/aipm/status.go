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
	"aipm/fsstore/storage"
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
and its unread messages and notifications, the tasks by status, and the
pending triggers (work waiting for an agent's session to start).

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

// statusReport is what status shows; its JSON is status --json.
type statusReport struct {
	Project string         `json:"project"`
	Agents  []agentStatus  `json:"agents"`
	Tasks   map[string]int `json:"tasks"` // count by status, every status present
	Pending int            `json:"tasksPendingApproval"`
	// HandEdits counts the tasks whose status was edited by hand to one
	// aipm does not allow (counted under their last valid status).
	HandEdits int               `json:"tasksEditedByHand,omitempty"`
	Triggers  []fsstore.Trigger `json:"pendingTriggers"`
	// Conversations and Delegations are the open ones.
	Conversations []fsstore.Conversation `json:"openConversations"`
	Delegations   []fsstore.Delegation   `json:"openDelegations"`
	Watch         *watchStatus           `json:"watcher"` // status_watch.go
	// short shows ids in the tables (table.Shortener); not in the JSON.
	short func(string) string
}

type agentStatus struct {
	ID                  string          `json:"id"`
	Type                string          `json:"type"`
	Sessions            []sessionStatus `json:"sessions"`
	UnreadMessages      int             `json:"unreadMessages"`
	UnreadNotifications int             `json:"unreadNotifications"`
	// Unseen flags messages that waited past unsurfaced_after without
	// reaching the agent, with what will happen to them (ReceiverStateOf).
	Unseen *unseenStatus `json:"unseenMessages,omitempty"`
}

type unseenStatus struct {
	fsstore.Unseen
	fsstore.ReceiverState
}

type sessionStatus struct {
	ID         string    `json:"id"`
	Purpose    string    `json:"purpose"`
	TaskID     string    `json:"taskId,omitempty"`
	LastSeenAt time.Time `json:"lastSeenAt"`
	SSHClient  string    `json:"sshClient,omitempty"`
}

// statusSection is one part of the report: collect fills its fields of
// the report, print shows them. A new part (open conversations, say) is
// one more entry in statusSections.
type statusSection struct {
	collect func(ctx context.Context, store *fsstore.Store, cfg *storage.Config, r *statusReport) error
	print   func(e *env, w io.Writer, r *statusReport) error
}

var statusSections = []statusSection{
	{collectAgents, printAgents},
	{collectTasks, printTasks},
	{collectTriggers, printTriggers},
	{collectConversations, printConversations},
	{collectDelegations, printDelegations},
	{collectWatch, printWatch},
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
	r := &statusReport{Project: cfg.Project.Name, Agents: []agentStatus{}, Tasks: map[string]int{}, Triggers: []fsstore.Trigger{},
		Conversations: []fsstore.Conversation{}, Delegations: []fsstore.Delegation{}}
	for _, s := range statusSections {
		if err := s.collect(ctx, store, cfg, r); err != nil {
			return fmt.Errorf("status: %w", err)
		}
	}
	e := o.e
	switch {
	case o.JSON && o.Watch:
		return writeJSONLine(e.stdout, r)
	case o.JSON:
		return writeJSON(e.stdout, r)
	}
	if r.short, err = table.Shortener(store.IDs, storage.Tasks, storage.Conversations, storage.Delegations); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	var b strings.Builder
	if o.Watch && table.IsTerminal(e.stdout) {
		b.WriteString("\x1b[H\x1b[2J")
	}
	fmt.Fprintf(&b, "project %s, %s\n", r.Project, e.timeText(time.Now()))
	for _, s := range statusSections {
		b.WriteString("\n")
		if err := s.print(e, &b, r); err != nil {
			return err
		}
	}
	_, err = io.WriteString(e.stdout, b.String())
	return err
}

func collectAgents(ctx context.Context, store *fsstore.Store, cfg *storage.Config, r *statusReport) error {
	live, err := store.LiveSessions(time.Now())
	if err != nil {
		return err
	}
	for _, a := range cfg.Agents {
		st := agentStatus{ID: a.ID, Type: a.Type, Sessions: []sessionStatus{}}
		for _, s := range live {
			if s.Agent == a.ID {
				st.Sessions = append(st.Sessions, sessionStatus{ID: s.ID, Purpose: s.Purpose, TaskID: s.TaskID, LastSeenAt: s.LastSeenAt, SSHClient: s.SSHClient})
			}
		}
		if st.UnreadMessages, st.UnreadNotifications, err = store.UnreadCounts(ctx, a.ID); err != nil {
			return fmt.Errorf("unread of %s: %w", a.ID, err)
		}
		if st.UnreadMessages > 0 {
			unseen, err := store.UnseenMessages(ctx, a.ID, time.Now().Add(-cfg.Defaults.UnsurfacedAfter.Duration))
			if err != nil {
				return fmt.Errorf("unseen messages of %s: %w", a.ID, err)
			}
			if unseen.Count > 0 {
				st.Unseen = &unseenStatus{Unseen: unseen, ReceiverState: store.ReceiverStateOf(cfg, a.ID, time.Now())}
			}
		}
		r.Agents = append(r.Agents, st)
	}
	return nil
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
		if a.Type == storage.AgentHuman {
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

func collectTasks(ctx context.Context, store *fsstore.Store, cfg *storage.Config, r *statusReport) error {
	tasks, _, _, err := store.Tasks(fsstore.TaskFilter{})
	if err != nil {
		return err
	}
	for _, s := range fsstore.Statuses {
		r.Tasks[s] = 0
	}
	for _, t := range tasks {
		r.Tasks[t.Status]++
		if t.HandStatus != "" {
			r.HandEdits++
		}
		if t.ApprovalStatus == fsstore.ApprovalPending {
			r.Pending++
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

func collectTriggers(ctx context.Context, store *fsstore.Store, cfg *storage.Config, r *statusReport) error {
	ts, err := store.Triggers().Pending()
	r.Triggers = append(r.Triggers, ts...)
	return err
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

func collectConversations(ctx context.Context, store *fsstore.Store, cfg *storage.Config, r *statusReport) error {
	cs, err := store.Conversations().List(ctx, cfg, false)
	r.Conversations = append(r.Conversations, cs...)
	return err
}

func printConversations(e *env, w io.Writer, r *statusReport) error {
	if len(r.Conversations) == 0 {
		_, err := fmt.Fprintln(w, "no open conversations")
		return err
	}
	return conversationTable(r.Conversations, r.short).Print(w, e.colour, e.width)
}

func collectDelegations(ctx context.Context, store *fsstore.Store, cfg *storage.Config, r *statusReport) error {
	ds, err := store.Delegations().List(fsstore.DelegationFilter{Open: true})
	r.Delegations = append(r.Delegations, ds...)
	return err
}

func printDelegations(e *env, w io.Writer, r *statusReport) error {
	if len(r.Delegations) == 0 {
		_, err := fmt.Fprintln(w, "no open delegations")
		return err
	}
	return delegationTable(r.Delegations, false, r.short).Print(w, e.colour, e.width)
}
