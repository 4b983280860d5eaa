package web

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"aipm/fsstore"
)

// State is what the page shows: the whole project as the files say, with
// chat history read from the tail of each log (its cost does not grow
// with the history).
type State struct {
	Project       string                 `json:"project"`
	EventID       int64                  `json:"eventId"`
	Now           time.Time              `json:"now"`
	Agents        []AgentView            `json:"agents"`
	Humans        []string               `json:"humans"`
	Tasks         []TaskView             `json:"tasks"`
	Chats         []Chat                 `json:"chats"`
	Conversations []fsstore.Conversation `json:"conversations"`
	Delegations   []fsstore.Delegation   `json:"delegations"`
	Approvals     []fsstore.Task         `json:"approvals"`
	Triggers      []fsstore.Trigger      `json:"triggers"`
	Timeline      []Event                `json:"timeline"`
	Leases        []LeaseView            `json:"leases"`
	// Statuses (in workflow order, each with whether a task in it is
	// open), Priorities (lowest first) and DefaultPriority are fsstore's
	// own: the page shows and orders tasks by them and restates none.
	Statuses        []StatusView `json:"statuses"`
	Priorities      []string     `json:"priorities"`
	DefaultPriority string       `json:"defaultPriority"`
	Problems        []string     `json:"problems,omitempty"`
	// Ready and Waiting count the project's ready and waiting tasks, all
	// of them, not only those shown (fsstore.Store.TaskCounts, as aipm
	// status does); Cycles are the dependency cycles the task files hold
	// (only a hand edit makes one), each with how to break it.
	Ready   int      `json:"ready"`
	Waiting int      `json:"waiting"`
	Cycles  []string `json:"cycles"`
}

// TaskView is a task with what its dependencies make of it, as fsstore
// judges them (DESIGN section 20): Ready says it is ready (to do, approved,
// waiting for nothing); Waits, for an open task, is what it waits for (its
// blockers not done, its subtasks others have) and WaitsText the same in
// the CLI's words; WaitedBy are the open tasks that wait for it now, as a
// blocker or as a subtask of theirs.
type TaskView struct {
	fsstore.Task
	Ready     bool       `json:"ready,omitempty"`
	Waits     []WaitView `json:"waits,omitempty"`
	WaitsText string     `json:"waitsText,omitempty"`
	WaitedBy  []string   `json:"waitedBy,omitempty"`
}

// WaitView is one thing a task waits for (fsstore.Wait): a task, its
// status ("" when it does not exist), and whether it is a subtask of the
// waiting task (the parent rule) rather than one of its blockers.
type WaitView struct {
	TaskID  string `json:"taskId"`
	Status  string `json:"status"`
	Subtask bool   `json:"subtask,omitempty"`
}

// StatusView is a task status, how the page names it, whether a task in
// it is open (fsstore.StatusOpen), and whether it is the blocked status,
// whose tasks carry why (Task.BlockedReason).
type StatusView struct {
	Name    string `json:"name"`
	Label   string `json:"label"`
	Open    bool   `json:"open"`
	Blocked bool   `json:"blocked,omitempty"`
}

// statusViews are fsstore's task statuses, in its order.
func statusViews() []StatusView {
	out := make([]StatusView, 0, len(fsstore.Statuses))
	for _, s := range fsstore.Statuses {
		out = append(out, StatusView{Name: s, Label: statusLabel(s), Open: fsstore.StatusOpen(s), Blocked: s == fsstore.StatusBlocked})
	}
	return out
}

// statusLabel is a status in words: "in_progress" is "In progress", and
// "todo" "To do".
func statusLabel(status string) string {
	if status == fsstore.StatusTodo {
		return "To do"
	}
	words := strings.ReplaceAll(status, "_", " ")
	if words == "" {
		return ""
	}
	return strings.ToUpper(words[:1]) + words[1:]
}

// AgentView is one agent with its live sessions, running processes and
// unread counts.
type AgentView struct {
	ID       string        `json:"id"`
	Type     string        `json:"type"`
	Role     string        `json:"role,omitempty"`
	Parent   string        `json:"parent,omitempty"`
	Sessions []SessionView `json:"sessions"`
	Runs     []RunView     `json:"runs"`
	// Problems are the agent's last runs that failed (fsstore Outcome),
	// each with the sentence its human was told.
	Problems            []ProblemView `json:"problems"`
	UnreadMessages      int           `json:"unreadMessages"`
	UnreadNotifications int           `json:"unreadNotifications"`
}

// SessionView is a live session, without its token hash.
type SessionView struct {
	ID         string    `json:"id"`
	Purpose    string    `json:"purpose"`
	TaskID     string    `json:"taskId,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
	LastSeenAt time.Time `json:"lastSeenAt"`
}

// RunView is a process the watcher started that still runs.
type RunView struct {
	Purpose   string    `json:"purpose"`
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"startedAt"`
	Reason    string    `json:"reason,omitempty"`
	LogLine   string    `json:"logLine,omitempty"` // its log's last meaningful line
}

// ProblemView is the last run of one purpose of an agent that did not
// work: how it ended, the sentence with the fix, its log's last line.
type ProblemView struct {
	Purpose string    `json:"purpose"`
	State   string    `json:"state"`
	Problem string    `json:"problem"`
	LogLine string    `json:"logLine,omitempty"`
	EndedAt time.Time `json:"endedAt"`
}

// Chat is the last messages among its agents (two, or a group message's
// sender and receivers), oldest first.
type Chat struct {
	Agents   []string      `json:"agents"`
	Messages []ChatMessage `json:"messages"`
}

// ChatMessage is a message with what its receiver saw of it: when it was
// surfaced (handed to a session or told by a notice) and when read; for a
// group message, each receiver's in SeenBy.
type ChatMessage struct {
	fsstore.Message
	fsstore.Seen
	SeenBy map[string]fsstore.Seen `json:"seenBy,omitempty"`
}

// Event is one line of the timeline: the watcher started a process, or a
// trigger waits for it to.
type Event struct {
	At      time.Time `json:"at"`
	Agent   string    `json:"agentId"`
	Purpose string    `json:"purpose"`
	What    string    `json:"what"` // started, waiting
	Reason  string    `json:"reason,omitempty"`
	PID     int       `json:"pid,omitempty"`
}

// LeaseView is a live file lease (DESIGN section 18) with the other shown
// leases it cannot be held with. TakeLease refuses a conflicting take, so
// Conflicts is empty unless leases.json was edited by hand; the page marks
// such a lease, since the hook then denies writes to both holders.
type LeaseView struct {
	fsstore.Lease
	Conflicts []LeaseConflict `json:"conflicts,omitempty"`
}

// LeaseConflict is another holder's lease (LeaseID, Holder) whose path
// Against overlaps Path, one of this lease's, with one of the two exclusive.
type LeaseConflict struct {
	LeaseID string `json:"leaseId"`
	Holder  string `json:"holder"`
	Path    string `json:"path"`
	Against string `json:"against"`
}

// Bounds on what one State carries.
const (
	maxTasks        = 500
	messagesPerChat = 50
	maxTimeline     = 50
	// maxConversations bounds the conversations shown, open or ended, newest first.
	maxConversations = 30
	// maxLeases bounds the leases shown, oldest first.
	maxLeases = 200
)

// buildState reads the State, without its event id and time (the feed
// sets them when it publishes a state that changed). A project that
// cannot be read at all is a State with the problem.
func buildState(ctx context.Context, store *fsstore.Store) State {
	// Lists are [] when empty, never null: the page iterates them.
	st := State{Statuses: statusViews(), Priorities: slices.Clone(fsstore.Priorities), DefaultPriority: fsstore.DefaultPriority,
		Agents: []AgentView{}, Humans: []string{}, Tasks: []TaskView{}, Chats: []Chat{}, Conversations: []fsstore.Conversation{},
		Delegations: []fsstore.Delegation{}, Approvals: []fsstore.Task{}, Triggers: []fsstore.Trigger{}, Timeline: []Event{}, Leases: []LeaseView{},
		Cycles: []string{}}
	cfg, err := store.LoadConfig()
	if err != nil {
		st.Problems = []string{err.Error()}
		return st
	}
	st.Project = cfg.Project.Name
	for _, part := range []func(context.Context, *fsstore.Store, *fsstore.Config, *State) error{
		readAgents, readTasks, readFlow, readChats, readWork, readTimeline, readLeases,
	} {
		if err := part(ctx, store, cfg, &st); err != nil {
			st.Problems = append(st.Problems, err.Error())
		}
	}
	return st
}

func readAgents(ctx context.Context, store *fsstore.Store, cfg *fsstore.Config, st *State) error {
	now := time.Now()
	sessions, err := store.LiveSessions(now)
	if err != nil {
		return err
	}
	runs, err := store.Runs().List()
	if err != nil {
		return err
	}
	outcomes, err := store.Runs().Outcomes()
	if err != nil {
		return err
	}
	for _, a := range cfg.Agents {
		v := AgentView{ID: a.ID, Type: a.Type, Role: a.Role, Parent: a.Parent, Sessions: []SessionView{}, Runs: []RunView{}, Problems: []ProblemView{}}
		if a.Type == fsstore.AgentHuman {
			st.Humans = append(st.Humans, a.ID)
		}
		for _, s := range sessions {
			if s.Agent == a.ID && s.Alive(now) {
				v.Sessions = append(v.Sessions, SessionView{ID: s.ID, Purpose: s.Purpose, TaskID: s.TaskID, CreatedAt: s.CreatedAt, LastSeenAt: s.LastSeenAt})
			}
		}
		for _, r := range runs {
			if r.Agent == a.ID && r.Alive() {
				v.Runs = append(v.Runs, RunView{Purpose: r.Purpose, PID: r.PID, StartedAt: r.StartedAt, Reason: r.Reason, LogLine: fsstore.LastLogLine(r.Log)})
			}
		}
		for _, o := range outcomes {
			if o.Agent == a.ID && o.Failed() {
				v.Problems = append(v.Problems, ProblemView{Purpose: o.Purpose, State: o.State, Problem: o.Problem, LogLine: o.LogLine, EndedAt: o.EndedAt})
			}
		}
		if v.UnreadMessages, v.UnreadNotifications, err = store.UnreadCounts(ctx, a.ID); err != nil {
			return err
		}
		st.Agents = append(st.Agents, v)
	}
	return nil
}

// readTasks is the newest tasks, each with what it waits for, whether it
// is ready and what waits for it, and those that wait for a decision.
func readTasks(_ context.Context, store *fsstore.Store, _ *fsstore.Config, st *State) error {
	tasks, _, problems, err := store.Tasks(fsstore.TaskFilter{Limit: maxTasks})
	if err != nil {
		return err
	}
	for _, p := range problems {
		st.Problems = append(st.Problems, p.Error())
	}
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
	}
	deps, err := store.TaskDeps(ids) // one look at the task index for them all
	if err != nil {
		return err
	}
	for _, t := range tasks {
		st.Tasks = append(st.Tasks, taskView(t, deps[t.ID]))
		if t.ApprovalStatus == fsstore.ApprovalPending || t.PendingChange != nil {
			st.Approvals = append(st.Approvals, t)
		}
	}
	return nil
}

// taskView is t with what its dependencies make of it: what it waits for
// (when open: a finished task waits for nothing), whether it is ready,
// and the open tasks that wait for it now.
func taskView(t fsstore.Task, d fsstore.TaskDeps) TaskView {
	v := TaskView{Task: t, Ready: d.Ready, WaitedBy: d.WaitedBy}
	if fsstore.StatusOpen(t.Status) && len(d.Waits) > 0 {
		v.WaitsText = fsstore.WaitsText(d.Waits)
		for _, w := range d.Waits {
			v.Waits = append(v.Waits, WaitView{TaskID: w.TaskID, Status: w.Status, Subtask: w.Subtask})
		}
	}
	return v
}

// readFlow counts the ready and waiting tasks and reads the cycles of
// the task files.
func readFlow(_ context.Context, store *fsstore.Store, _ *fsstore.Config, st *State) error {
	var err error
	if st.Ready, st.Waiting, err = store.TaskCounts(); err != nil {
		return err
	}
	cycles, err := store.Cycles()
	st.Cycles = append(st.Cycles, cycles...)
	return err
}

// readChats reads the tail of every agent's log and groups the messages
// by the agents they are between (each message is in two logs, a group
// message in each party's: counted once).
func readChats(_ context.Context, store *fsstore.Store, cfg *fsstore.Config, st *State) error {
	seen := map[string]bool{}
	chats := map[string][]ChatMessage{} // by the parties, joined
	receipts := map[string]map[string]fsstore.Seen{}
	seenBy := func(agent, id string) fsstore.Seen {
		if _, ok := receipts[agent]; !ok {
			receipts[agent], _ = store.Receipts(agent) // unreadable: shown without times
		}
		return receipts[agent][id]
	}
	for _, a := range cfg.Agents {
		msgs, err := store.Tail(a.ID, messagesPerChat)
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if seen[m.ID] {
				continue
			}
			seen[m.ID] = true
			cm := ChatMessage{Message: m}
			receivers := m.ReceiverIDs
			if receivers == nil {
				receivers = []string{cmp.Or(m.ReceiverID, a.ID)}
				cm.Seen = seenBy(receivers[0], m.ID)
			} else {
				cm.SeenBy = map[string]fsstore.Seen{}
				for _, r := range receivers {
					cm.SeenBy[r] = seenBy(r, m.ID)
				}
			}
			parties := append([]string{m.SenderID}, receivers...)
			slices.Sort(parties)
			key := strings.Join(slices.Compact(parties), "|")
			chats[key] = append(chats[key], cm)
		}
	}
	for key, msgs := range chats {
		slices.SortStableFunc(msgs, func(a, b ChatMessage) int { return compareTime(a.CreatedAt, b.CreatedAt) })
		if len(msgs) > messagesPerChat {
			msgs = msgs[len(msgs)-messagesPerChat:]
		}
		st.Chats = append(st.Chats, Chat{Agents: strings.Split(key, "|"), Messages: msgs})
	}
	// The most recently active first.
	slices.SortFunc(st.Chats, func(a, b Chat) int {
		return -compareTime(a.Messages[len(a.Messages)-1].CreatedAt, b.Messages[len(b.Messages)-1].CreatedAt)
	})
	return nil
}

func compareTime(a, b string) int {
	ta, _ := time.Parse(time.RFC3339Nano, a)
	tb, _ := time.Parse(time.RFC3339Nano, b)
	return ta.Compare(tb)
}

func readWork(ctx context.Context, store *fsstore.Store, cfg *fsstore.Config, st *State) error {
	convs, err := store.Conversations().List(ctx, cfg, true)
	if err != nil {
		return err
	}
	slices.SortFunc(convs, func(a, b fsstore.Conversation) int { return b.CreatedAt.Compare(a.CreatedAt) })
	if len(convs) > maxConversations {
		convs = convs[:maxConversations]
	}
	st.Conversations = append(st.Conversations, convs...)
	dlgs, err := store.Delegations().List(fsstore.DelegationFilter{})
	if err != nil {
		return err
	}
	slices.SortFunc(dlgs, func(a, b fsstore.Delegation) int { return b.CreatedAt.Compare(a.CreatedAt) })
	st.Delegations = append(st.Delegations, dlgs...)
	triggers, err := store.Triggers().Pending()
	st.Triggers = append(st.Triggers, triggers...)
	return err
}

// readTimeline is what the watcher started (from its logs) and the
// triggers that wait for it, newest first.
func readTimeline(_ context.Context, store *fsstore.Store, cfg *fsstore.Config, st *State) error {
	ids := make([]string, 0, len(cfg.Agents))
	for _, a := range cfg.Agents {
		ids = append(ids, a.ID)
	}
	started, err := store.Runs().History(ids, maxTimeline)
	if err != nil {
		return err
	}
	runs, _ := store.Runs().List()
	for _, s := range started {
		e := Event{At: s.At, Agent: s.Agent, Purpose: s.Purpose, What: "started"}
		for _, r := range runs { // the reason survives while the run does
			if r.Agent == s.Agent && r.Purpose == s.Purpose && r.StartedAt.Sub(s.At).Abs() < time.Second {
				e.Reason, e.PID = r.Reason, r.PID
			}
		}
		st.Timeline = append(st.Timeline, e)
	}
	for _, t := range st.Triggers {
		st.Timeline = append(st.Timeline, Event{At: t.CreatedAt, Agent: t.Agent, Purpose: t.Purpose, What: "waiting", Reason: t.Reason})
	}
	slices.SortFunc(st.Timeline, func(a, b Event) int { return b.At.Compare(a.At) })
	if len(st.Timeline) > maxTimeline {
		st.Timeline = st.Timeline[:maxTimeline]
	}
	return nil
}

// readLeases is the live leases, oldest first, each with the others it
// conflicts with.
func readLeases(_ context.Context, store *fsstore.Store, _ *fsstore.Config, st *State) error {
	leases, overlaps, err := store.LeasesAndOverlaps()
	if err != nil {
		return err
	}
	if len(leases) > maxLeases {
		leases = leases[:maxLeases]
	}
	views := make([]LeaseView, len(leases))
	for i, l := range leases {
		views[i] = LeaseView{Lease: l}
	}
	for _, o := range overlaps {
		if o.J >= len(leases) {
			continue
		}
		a, b := leases[o.I], leases[o.J]
		views[o.I].Conflicts = append(views[o.I].Conflicts, LeaseConflict{LeaseID: b.ID, Holder: b.Holder, Path: o.PathI, Against: o.PathJ})
		views[o.J].Conflicts = append(views[o.J].Conflicts, LeaseConflict{LeaseID: a.ID, Holder: a.Holder, Path: o.PathJ, Against: o.PathI})
	}
	st.Leases = append(st.Leases, views...)
	return nil
}
