package status

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"aipm/fsstore"
	"aipm/internal/table"
)

// View is how the command shows the report: colour, the terminal's
// width, and the command's rules for ids and times.
type View struct {
	Colour bool
	Width  int
	// Short shows ids in the tables (table.Shortener).
	Short func(string) string
	// Age shows a time as an age (table.Age), Time as a date and time.
	Age, Time func(time.Time) string
}

// printSections print the report's parts, in order; Collect fills them.
var printSections = []func(v View, w io.Writer, r *Report) error{
	printAgents, printTasks, printTriggers, printConversations, printDelegations, printWatch, printLeases,
}

// Print writes the report as aipm status shows it: a line naming the
// project and the time, then each section after a blank line.
func Print(w io.Writer, r *Report, v View) error {
	if _, err := fmt.Fprintf(w, "project %s, %s\n", r.Project, v.Time(time.Now())); err != nil {
		return err
	}
	for _, print := range printSections {
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
		if err := print(v, w, r); err != nil {
			return err
		}
	}
	return nil
}

func printAgents(v View, w io.Writer, r *Report) error {
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
				one += " (" + v.Short(s.TaskID) + ")"
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
		t.Add(a.ID, a.Type, table.Dash(strings.Join(ses, ", ")), fmt.Sprint(a.UnreadMessages), notes)
	}
	if err := t.Print(w, v.Colour, v.Width); err != nil {
		return err
	}
	return printUnseen(v, w, r)
}

// printUnseen flags the messages that waited unseen past unsurfaced_after,
// and says why (the receiver's state).
func printUnseen(v View, w io.Writer, r *Report) error {
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
			oldest = fmt.Sprintf(" (oldest from %s, %s)", u.Oldest.SenderID, v.Age(at))
		}
		if _, err := fmt.Fprintf(w, "! %d %s to %s not seen%s: %s\n", u.Count, noun, a.ID, oldest, u.Note); err != nil {
			return err
		}
	}
	return nil
}

func printTasks(v View, w io.Writer, r *Report) error {
	t := &table.Table{Header: []string{"TASKS", "COUNT"}, Style: func(col int, cell string) string {
		if col == 0 {
			return TaskStyle(cell)
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
	t.Add("ready (todo, waiting for nothing)", fmt.Sprint(r.Ready))
	t.Add("waiting for other tasks", fmt.Sprint(r.Waiting))
	return t.Print(w, v.Colour, v.Width)
}

func printTriggers(v View, w io.Writer, r *Report) error {
	if len(r.Triggers) == 0 {
		_, err := fmt.Fprintln(w, "no pending triggers")
		return err
	}
	t := &table.Table{Header: []string{"PENDING TRIGGER", "TASK", "SINCE", "REASON"}, Cut: 3}
	for _, tr := range r.Triggers {
		t.Add(tr.Agent+"."+tr.Purpose, table.Dash(v.Short(tr.TaskID)), v.Age(tr.CreatedAt), table.Visible(tr.Reason))
	}
	return t.Print(w, v.Colour, v.Width)
}

func printConversations(v View, w io.Writer, r *Report) error {
	if len(r.Conversations) == 0 {
		_, err := fmt.Fprintln(w, "no open conversations")
		return err
	}
	return ConversationTable(r.Conversations, v.Short).Print(w, v.Colour, v.Width)
}

func printDelegations(v View, w io.Writer, r *Report) error {
	if len(r.Delegations) == 0 {
		_, err := fmt.Fprintln(w, "no open delegations")
		return err
	}
	return DelegationTable(r.Delegations, false, v.Short).Print(w, v.Colour, v.Width)
}

func printWatch(v View, w io.Writer, r *Report) error {
	s := r.Watch
	if !s.Running {
		fmt.Fprintln(w, "watcher          not running: start it with aipm watch (agents with a command are started only by it)")
	} else {
		up := time.Since(s.StartedAt).Round(time.Second)
		fmt.Fprintf(w, "watcher          pid %d, up %s (since %s)\n", s.PID, up, v.Time(s.StartedAt))
	}
	if len(s.Processes) == 0 {
		fmt.Fprintln(w, "no agent processes running")
	} else {
		t := &table.Table{Header: []string{"AGENT PROCESS", "PID", "STARTED", "REASON", "ITS LOG ENDS"}, Cut: 4}
		for _, run := range s.Processes {
			t.Add(run.Agent+"."+run.Purpose, fmt.Sprint(run.PID), v.Age(run.StartedAt), table.Visible(run.Reason), table.Visible(run.LogLine))
		}
		if err := t.Print(w, v.Colour, v.Width); err != nil {
			return err
		}
	}
	return printLastRuns(v, w, s)
}

// printLastRuns is how each agent's last run ended, then every problem
// in full (the sentence its human was told, with the fix).
func printLastRuns(v View, w io.Writer, s *Watch) error {
	if len(s.LastRuns) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	t := &table.Table{Header: []string{"LAST RUN", "OUTCOME", "ENDED"}}
	var problems []fsstore.Outcome
	for _, o := range s.LastRuns {
		t.Add(o.Agent+"."+o.Purpose, strings.ReplaceAll(o.State, "_", " "), v.Age(o.EndedAt))
		if o.Failed() {
			problems = append(problems, o)
		}
	}
	if err := t.Print(w, v.Colour, v.Width); err != nil {
		return err
	}
	for _, o := range problems {
		fmt.Fprintf(w, "  %s.%s: %s\n", o.Agent, o.Purpose, table.Visible(o.Problem))
	}
	return nil
}

func printLeases(v View, w io.Writer, r *Report) error {
	if r.LeasesUnreadable != "" {
		_, err := fmt.Fprintln(w, table.Visible(r.LeasesUnreadable))
		return err
	}
	if len(r.Leases) == 0 {
		_, err := fmt.Fprintln(w, "no file leases")
		return err
	}
	if err := LeaseTable(r.Leases).Print(w, v.Colour, v.Width); err != nil {
		return err
	}
	for _, c := range r.LeaseConflicts {
		if _, err := fmt.Fprintf(w, "conflict: %s's lease on %s and %s's on %s cannot both hold (leases.json was edited by hand): end one with aipm leases break\n",
			table.Visible(c.A.Holder), table.Visible(c.PathA), table.Visible(c.B.Holder), table.Visible(c.PathB)); err != nil {
			return err
		}
	}
	return nil
}

// TaskStyle colours task statuses: what needs a person stands out.
func TaskStyle(status string) string {
	switch strings.Fields(status + " ")[0] {
	case fsstore.StatusBlocked:
		return "31" // red
	case fsstore.StatusInProgress:
		return "33" // yellow
	case fsstore.StatusDone:
		return "32" // green
	case fsstore.StatusCancelled:
		return "2" // dim
	}
	return ""
}

// ConversationTable is the one table of conversations (aipm conversations
// and status); short shows conversation and task ids (table.Shortener).
func ConversationTable(cs []fsstore.Conversation, short func(string) string) *table.Table {
	t := &table.Table{Header: []string{"CONVERSATION", "STATE", "INITIATOR", "PARTICIPANT", "TURNS", "TASK", "PURPOSE"}, Cut: 6}
	for _, c := range cs {
		state := c.State
		if c.EndReason != "" {
			state += " (" + c.EndReason + ")"
		}
		t.Add(short(c.ID), state, c.Initiator, strings.Join(c.Others(c.Initiator), ", "), fmt.Sprintf("%d/%d", c.Turns, c.MaxTurns), table.Dash(short(c.TaskID)), table.Visible(table.OneLine(c.Purpose)))
	}
	return t
}

// DelegationTable is the one table of delegations (aipm delegations and
// status); short shows delegation and task ids (table.Shortener).
func DelegationTable(ds []fsstore.Delegation, results bool, short func(string) string) *table.Table {
	t := &table.Table{Header: []string{"DELEGATION", "STATUS", "AGENT", "TO", "TASK", "PURPOSE"}, Cut: 5}
	if results {
		t.Header = append(t.Header, "RESULT")
		t.Cut = 6
	}
	for _, d := range ds {
		row := []string{short(d.ID), d.Status, d.Agent, d.Target, table.Dash(short(d.TaskID)), table.Visible(table.OneLine(d.Purpose))}
		if results {
			row = append(row, table.Dash(table.Visible(table.OneLine(d.Result))))
		}
		t.Add(row...)
	}
	return t
}

// LeaseTable is the one table of leases (aipm leases and status).
func LeaseTable(leases []fsstore.Lease) *table.Table {
	t := &table.Table{Header: []string{"HOLDER", "MODE", "PATHS", "EXPIRES", "REASON"}, Cut: 4}
	for _, l := range leases {
		mode := LeaseMode(l)
		left := max(time.Until(l.ExpiresAt), 0).Truncate(time.Second).String()
		if d := time.Until(l.ExpiresAt); d >= time.Minute {
			left = strings.TrimSuffix(d.Truncate(time.Minute).String(), "0s") // 1h59m
		}
		t.Add(l.Holder, mode, table.Visible(strings.Join(l.Paths, " ")), "in "+left, table.Dash(table.Visible(table.OneLine(l.Reason))))
	}
	return t
}

// LeaseMode is how l holds its paths: exclusive or shared.
func LeaseMode(l fsstore.Lease) string {
	if l.Exclusive {
		return "exclusive"
	}
	return "shared"
}
