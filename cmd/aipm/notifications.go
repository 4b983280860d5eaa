package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"aipm/fsstore"
	"aipm/fsstore/storage"
	"aipm/wake"
)

type notificationsOptions struct {
	e      *env
	Agent  string
	Follow bool
	Last   int
	Unread bool
	JSON   bool
}

func newCmdNotifications(e *env, runF func(*notificationsOptions) error) *cobra.Command {
	o := &notificationsOptions{e: e}
	c := &cobra.Command{
		Use:   "notifications [AGENT] [--unread] [--follow] [--last N]",
		Short: "Show agents' notifications (interrupts and infos) without marking them read",
		Long: `Show the notifications addressed to AGENT (.ai-pm/agents/AGENT/notifications.jsonl),
or to every agent of the project, oldest first:
TIME  AGENT  TYPE  STATE  from WHO  TASK: MESSAGE.
TYPE is interrupt or info. STATE is unread while no session that may see it
has received it (the NOTIFICATIONS count of aipm status; one about a task only
counts as read once the agent's task session got it), expired once it outlived
its type's time to live ([notifications.ttl] in config.toml: no session will
get it), else read.

Looking is a peek: nothing is marked read, so the agents' sessions still get
every notification. --unread shows only the unread ones; --follow keeps
printing new notifications, woken by fsnotify, until Ctrl-C (exit 130).

--json prints a JSON array of the notifications, each with its agent and
read; with --follow it prints one compact JSON object per line instead.`,
		Example: "  aipm notifications\n  aipm notifications coder --unread\n  aipm notifications coder --follow --last 5\n  aipm notifications --json",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError("%s takes at most one agent id, got %s: %s", cmd.CommandPath(), plural(len(args), "argument"), cmd.UseLine())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Agent = args[0]
				if err := storage.CheckAgentID(o.Agent); err != nil {
					return asUsage(err)
				}
			}
			if o.Last < 0 {
				return usageError("notifications --last must not be negative, got %d", o.Last)
			}
			if runF != nil {
				return runF(o)
			}
			return notificationsRun(cmd.Context(), o)
		},
	}
	c.ValidArgsFunction = e.completeAgents(0, "")
	c.Flags().BoolVarP(&o.Follow, "follow", "f", false, "keep printing new notifications until interrupted")
	c.Flags().IntVar(&o.Last, "last", 0, "show only the last N notifications (then follow)")
	c.Flags().BoolVar(&o.Unread, "unread", false, "show only the notifications no session has read yet")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the notifications as a JSON array (JSON lines with --follow)")
	return c
}

func notificationsRun(ctx context.Context, o *notificationsOptions) error {
	store, cfg, err := o.e.open()
	if err != nil {
		return err
	}
	var agents []string
	if o.Agent != "" {
		// An agent removed from the config keeps its history: the directory decides.
		if dir, _ := store.AgentDir(o.Agent); !isDir(dir) {
			return usageError("agent %q is not an agent of this project: see aipm agent list", o.Agent)
		}
		agents = []string{o.Agent}
	} else {
		for _, a := range cfg.Agents {
			agents = append(agents, a.ID)
		}
	}
	f := &notificationFeed{e: o.e, store: store, agents: agents, cursors: map[string]storage.Cursor{}, json: o.JSON, stream: o.Follow, unread: o.Unread}
	return f.show(ctx, o.Last, o.Follow)
}

// notificationFeed prints the notifications of some agents.
type notificationFeed struct {
	e       *env
	store   *fsstore.Store
	agents  []string
	cursors map[string]storage.Cursor
	json    bool
	stream  bool // JSON lines rather than one array
	unread  bool // only the unread ones
}

// agentNotification is one notification as aipm notifications shows it.
type agentNotification struct {
	Agent string `json:"agent"`
	fsstore.Notification
	Read bool `json:"read"`
}

// show prints the notifications (the last ones only, if last > 0) and, if
// follow, every one appended later until ctx ends. As in log --follow, the
// subscription comes before the first read, so nothing written in between
// is missed.
func (f *notificationFeed) show(ctx context.Context, last int, follow bool) error {
	var sub *wake.Subscription
	if follow {
		var targets []string
		for _, a := range f.agents {
			if dir, _ := f.store.AgentDir(a); isDir(dir) {
				path, _ := f.store.NotificationsPath(a)
				targets = append(targets, path)
			}
		}
		var err error
		if sub, err = wake.New().Subscribe(targets...); err != nil {
			return fmt.Errorf("notifications --follow: %w", err)
		}
		defer sub.Close()
	}
	ns, err := f.read(ctx)
	if err != nil {
		return err
	}
	if last > 0 && len(ns) > last {
		ns = ns[len(ns)-last:]
	}
	if err := f.print(ns, !follow); err != nil || !follow {
		return err
	}
	for {
		if _, err := sub.Wait(ctx, followRecheck); err != nil {
			return nil // interrupted: how --follow ends (mainExit exits 130)
		}
		if ns, err = f.read(ctx); err != nil {
			return err
		}
		if err := f.print(ns, false); err != nil {
			return err
		}
	}
}

// read returns the notifications past each agent's cursor, oldest first
// across agents, with whether they were read (only the unread ones, if
// f.unread), and moves the cursors past them. Invalid lines are warnings.
func (f *notificationFeed) read(ctx context.Context) ([]agentNotification, error) {
	var out []agentNotification
	for _, agent := range f.agents {
		ns, cur, bad, err := f.store.FollowNotifications(agent, f.cursors[agent])
		if err != nil {
			return nil, fmt.Errorf("notifications of %s: %w", agent, err)
		}
		f.cursors[agent] = cur
		for _, le := range bad {
			fmt.Fprintf(f.e.stderr, "aipm: warning: skipped %v\n", le)
		}
		if len(ns) == 0 {
			continue
		}
		unread, err := f.store.UnreadNotificationIDs(ctx, agent)
		if err != nil {
			return nil, fmt.Errorf("notifications of %s: %w", agent, err)
		}
		for _, n := range ns {
			if !f.unread || unread[n.ID] {
				out = append(out, agentNotification{Agent: agent, Notification: n, Read: !unread[n.ID]})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b agentNotification) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// print writes ns; whole says this is the whole answer (not a follow's
// later part), which may say there is none.
func (f *notificationFeed) print(ns []agentNotification, whole bool) error {
	switch {
	case f.json && !f.stream:
		if ns == nil {
			ns = []agentNotification{}
		}
		return writeJSON(f.e.stdout, ns)
	case f.json:
		for _, n := range ns {
			if err := writeJSONLine(f.e.stdout, n); err != nil {
				return err
			}
		}
		return nil
	case len(ns) == 0 && whole:
		what := "no notifications"
		if f.unread {
			what = "no unread notifications"
		}
		_, err := fmt.Fprintln(f.e.stdout, what)
		return err
	}
	for _, n := range ns {
		f.e.writeNotification(n)
	}
	return nil
}

// writeNotification prints "TIME  AGENT  TYPE  STATE  from WHO  TASK: MESSAGE",
// the sender and the task only when there are, control characters escaped.
func (e *env) writeNotification(n agentNotification) {
	state := "unread"
	switch {
	case n.Expired:
		state = "expired" // past its time to live: no session will get it
	case n.Read:
		state = "read"
	}
	head := fmt.Sprintf("%s  %s  %-9s  %-6s", e.timeText(n.CreatedAt), n.Agent, n.Type, state)
	if n.From != "" {
		head += "  from " + n.From
	}
	if n.TaskID != "" {
		head += "  " + n.TaskID
	}
	fmt.Fprintf(e.stdout, "%s: %s\n", visible(head), visible(n.Message))
}
