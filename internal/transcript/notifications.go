package transcript

import (
	"context"
	"fmt"
	"slices"

	"aipm/fsstore"
	"aipm/internal/table"
	"aipm/wake"
)

// Notifications prints the notifications of some agents.
type Notifications struct {
	P       *Printer
	Store   *fsstore.Store
	Agents  []string
	JSON    bool
	Stream  bool // JSON lines rather than one array
	Unread  bool // only the unread ones
	cursors map[string]fsstore.Cursor
}

// AgentNotification is one notification as aipm notifications shows it.
type AgentNotification struct {
	Agent string `json:"agent"`
	fsstore.Notification
	Read bool `json:"read"`
}

// Show prints the notifications (the last ones only, if last > 0) and, if
// follow, every one appended later until ctx ends. As in log --follow, the
// subscription comes before the first read, so nothing written in between
// is missed.
func (f *Notifications) Show(ctx context.Context, last int, follow bool) error {
	var sub *wake.Subscription
	if follow {
		var targets []string
		for _, a := range f.Agents {
			if dir, _ := f.Store.AgentDir(a); IsDir(dir) {
				path, _ := f.Store.NotificationsPath(a)
				targets = append(targets, path)
			}
		}
		var err error
		if sub, err = wake.New().Subscribe(targets...); err != nil {
			return fmt.Errorf("notifications --follow: %w", err)
		}
		defer sub.Close()
	}
	if f.cursors == nil {
		f.cursors = map[string]fsstore.Cursor{}
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
// f.Unread), and moves the cursors past them. Invalid lines are warnings.
func (f *Notifications) read(ctx context.Context) ([]AgentNotification, error) {
	var out []AgentNotification
	for _, agent := range f.Agents {
		ns, cur, bad, err := f.Store.FollowNotifications(agent, f.cursors[agent])
		if err != nil {
			return nil, fmt.Errorf("notifications of %s: %w", agent, err)
		}
		f.cursors[agent] = cur
		for _, le := range bad {
			f.P.Skipped(le)
		}
		if len(ns) == 0 {
			continue
		}
		unread, err := f.Store.UnreadNotificationIDs(ctx, agent)
		if err != nil {
			return nil, fmt.Errorf("notifications of %s: %w", agent, err)
		}
		for _, n := range ns {
			if !f.Unread || unread[n.ID] {
				out = append(out, AgentNotification{Agent: agent, Notification: n, Read: !unread[n.ID]})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b AgentNotification) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// print writes ns; whole says this is the whole answer (not a follow's
// later part), which may say there is none.
func (f *Notifications) print(ns []AgentNotification, whole bool) error {
	switch {
	case f.JSON && !f.Stream:
		if ns == nil {
			ns = []AgentNotification{}
		}
		return WriteJSON(f.P.Stdout, ns)
	case f.JSON:
		for _, n := range ns {
			if err := WriteJSONLine(f.P.Stdout, n); err != nil {
				return err
			}
		}
		return nil
	case len(ns) == 0 && whole:
		what := "no notifications"
		if f.Unread {
			what = "no unread notifications"
		}
		_, err := fmt.Fprintln(f.P.Stdout, what)
		return err
	}
	for _, n := range ns {
		f.P.writeNotification(n)
	}
	return nil
}

// writeNotification prints "TIME  AGENT  TYPE  STATE  from WHO  TASK: MESSAGE",
// the sender and the task only when there are, control characters escaped.
func (p *Printer) writeNotification(n AgentNotification) {
	state := "unread"
	switch {
	case n.Expired:
		state = "expired" // past its time to live: no session will get it
	case n.Read:
		state = "read"
	}
	head := fmt.Sprintf("%s  %s  %-9s  %-6s", p.TimeText(n.CreatedAt), n.Agent, n.Type, state)
	if n.From != "" {
		head += "  from " + n.From
	}
	if n.TaskID != "" {
		head += "  " + n.TaskID
	}
	fmt.Fprintf(p.Stdout, "%s: %s\n", table.Visible(head), table.Visible(n.Message))
}
