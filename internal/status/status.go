// Package status is what aipm status reports of a project: its agents
// with their live sessions and unread counts, the tasks by status and how
// many are ready or waiting, the pending triggers, open conversations and
// delegations, the watcher and the agent processes it started, and the
// live file leases; and how it prints them (Print), with the tables the
// list commands share (tasks, conversations, delegations, leases) and a
// task as aipm task show prints it (PrintTask).
package status

import (
	"context"
	"fmt"
	"time"

	"aipm/fsstore"
)

// sections collect the parts of the report, in its order.
var sections = []func(ctx context.Context, store *fsstore.Store, cfg *fsstore.Config, r *Report) error{
	collectAgents, collectTasks, collectTriggers, collectConversations, collectDelegations, collectWatch, collectLeases,
}

// Collect reads the report of the project.
func Collect(ctx context.Context, store *fsstore.Store, cfg *fsstore.Config) (*Report, error) {
	r := &Report{Project: cfg.Project.Name, Agents: []Agent{}, Tasks: map[string]int{}, Triggers: []fsstore.Trigger{},
		Conversations: []fsstore.Conversation{}, Delegations: []fsstore.Delegation{}, Leases: []fsstore.Lease{}}
	for _, collect := range sections {
		if err := collect(ctx, store, cfg, r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Report is what aipm status shows; its JSON is status --json.
type Report struct {
	Project string         `json:"project"`
	Agents  []Agent        `json:"agents"`
	Tasks   map[string]int `json:"tasks"` // count by status, every status present
	Pending int            `json:"tasksPendingApproval"`
	// Ready counts the tasks ready to start (todo, approved, waiting for
	// nothing), Waiting the open ones waiting for other tasks
	// (fsstore.Store.TaskCounts).
	Ready   int `json:"tasksReady"`
	Waiting int `json:"tasksWaiting"`
	// HandEdits counts the tasks whose status was edited by hand to one
	// aipm does not allow (counted under their last valid status).
	HandEdits int `json:"tasksEditedByHand,omitempty"`
	// UnreadableTasks are the task files that could not be read (half a
	// JSON document, a hand edit gone wrong), counted nowhere: each
	// "path:line: what is wrong".
	UnreadableTasks []string          `json:"unreadableTasks,omitempty"`
	Triggers        []fsstore.Trigger `json:"pendingTriggers"`
	// Conversations and Delegations are the open ones.
	Conversations []fsstore.Conversation `json:"openConversations"`
	Delegations   []fsstore.Delegation   `json:"openDelegations"`
	Watch         *Watch                 `json:"watcher"`
	Leases        []fsstore.Lease        `json:"leases"`
	// LeasesUnreadable says, when leases.json cannot be read, what is
	// wrong and what to do (Leases is empty then).
	LeasesUnreadable string `json:"leasesUnreadable,omitempty"`
	// LeaseConflicts are pairs of live leases that cannot both hold
	// (fsstore.LeaseOverlap): only a hand edit of leases.json makes one.
	LeaseConflicts []LeaseConflict `json:"leaseConflicts,omitempty"`
}

// LeaseConflict is two live leases that cannot both hold: A's path and
// B's overlap, and one of them is exclusive.
type LeaseConflict struct {
	A fsstore.Lease `json:"a"`
	B fsstore.Lease `json:"b"`
	// PathA and PathB are the overlapping paths, of A and of B.
	PathA string `json:"pathA"`
	PathB string `json:"pathB"`
}

// Agent is one agent as status reports it: its sessions and what waits for it.
type Agent struct {
	ID                  string    `json:"id"`
	Type                string    `json:"type"`
	Sessions            []Session `json:"sessions"`
	UnreadMessages      int       `json:"unreadMessages"`
	UnreadNotifications int       `json:"unreadNotifications"`
	// Unseen flags messages that waited past unsurfaced_after without
	// reaching the agent, with what will happen to them (ReceiverStateOf).
	Unseen *Unseen `json:"unseenMessages,omitempty"`
}

// Unseen is an agent's unread messages and notifications, with what will
// happen to the messages (live, starting, queued).
type Unseen struct {
	fsstore.Unseen
	fsstore.ReceiverState
}

// Session is one live session of an agent.
type Session struct {
	ID         string    `json:"id"`
	Purpose    string    `json:"purpose"`
	TaskID     string    `json:"taskId,omitempty"`
	LastSeenAt time.Time `json:"lastSeenAt"`
	SSHClient  string    `json:"sshClient,omitempty"`
}

// Watch is the section of aipm watch: the watcher (nil when
// none runs) and the agent processes it started (runs/).
type Watch struct {
	Running   bool      `json:"running"`
	PID       int       `json:"pid,omitempty"`
	StartedAt time.Time `json:"startedAt,omitzero"`
	Processes []Process `json:"agentProcesses"`
	// LastRuns is how each agent's last run of each purpose ended, newest
	// first (fsstore Outcome: its problem and its log's last line).
	LastRuns []fsstore.Outcome `json:"lastRuns"`
}

// Process is a live process the watcher started, with the last
// meaningful line of its log: what it is doing, or why it is stuck.
type Process struct {
	fsstore.Run
	LogLine string `json:"logLine,omitempty"`
}

func collectWatch(_ context.Context, store *fsstore.Store, _ *fsstore.Config, r *Report) error {
	info, err := store.RunningWatcher()
	if err != nil {
		return err
	}
	w := &Watch{Processes: []Process{}, LastRuns: []fsstore.Outcome{}}
	if info != nil {
		w.Running, w.PID, w.StartedAt = true, info.PID, info.StartedAt
	}
	runs, err := store.Runs().List()
	if err != nil {
		return err
	}
	for _, run := range runs {
		if run.Alive() {
			w.Processes = append(w.Processes, Process{Run: run, LogLine: fsstore.LastLogLine(run.Log)})
		}
	}
	outcomes, err := store.Runs().Outcomes()
	if err != nil {
		return err
	}
	w.LastRuns = append(w.LastRuns, outcomes...)
	r.Watch = w
	return nil
}

func collectAgents(ctx context.Context, store *fsstore.Store, cfg *fsstore.Config, r *Report) error {
	live, err := store.LiveSessions(time.Now())
	if err != nil {
		return err
	}
	for _, a := range cfg.Agents {
		st := Agent{ID: a.ID, Type: a.Type, Sessions: []Session{}}
		for _, s := range live {
			if s.Agent == a.ID {
				st.Sessions = append(st.Sessions, Session{ID: s.ID, Purpose: s.Purpose, TaskID: s.TaskID, LastSeenAt: s.LastSeenAt, SSHClient: s.SSHClient})
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
				st.Unseen = &Unseen{Unseen: unseen, ReceiverState: store.ReceiverStateOf(cfg, a.ID, time.Now())}
			}
		}
		r.Agents = append(r.Agents, st)
	}
	return nil
}

func collectTasks(ctx context.Context, store *fsstore.Store, cfg *fsstore.Config, r *Report) error {
	tasks, _, bad, err := store.Tasks(fsstore.TaskFilter{})
	if err != nil {
		return err
	}
	for _, e := range bad {
		r.UnreadableTasks = append(r.UnreadableTasks, e.Error())
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
	if r.Ready, r.Waiting, err = store.TaskCounts(); err != nil {
		return fmt.Errorf("ready and waiting tasks: %w", err)
	}
	return nil
}

func collectTriggers(ctx context.Context, store *fsstore.Store, cfg *fsstore.Config, r *Report) error {
	ts, err := store.Triggers().Pending()
	r.Triggers = append(r.Triggers, ts...)
	return err
}

func collectConversations(ctx context.Context, store *fsstore.Store, cfg *fsstore.Config, r *Report) error {
	cs, err := store.Conversations().List(ctx, cfg, false)
	r.Conversations = append(r.Conversations, cs...)
	return err
}

func collectDelegations(ctx context.Context, store *fsstore.Store, cfg *fsstore.Config, r *Report) error {
	ds, err := store.Delegations().List(fsstore.DelegationFilter{Open: true})
	r.Delegations = append(r.Delegations, ds...)
	return err
}

// collectLeases reads the live leases and the pairs of them that cannot
// both hold. Leases that cannot be read leave the rest of the report as
// it is: the table's place says what is wrong and what to do.
func collectLeases(ctx context.Context, store *fsstore.Store, cfg *fsstore.Config, r *Report) error {
	ls, overlaps, err := store.LeasesAndOverlaps()
	if err != nil {
		r.LeasesUnreadable = fmt.Sprintf("the file leases cannot be read (%v), so the hook refuses every file write: a human repairs %s (aipm doctor says what is wrong) or removes it, which ends every lease",
			err, store.Rel(store.LeasesPath()))
		return nil
	}
	r.Leases = append(r.Leases, ls...)
	for _, o := range overlaps {
		r.LeaseConflicts = append(r.LeaseConflicts, LeaseConflict{A: ls[o.I], B: ls[o.J], PathA: o.PathI, PathB: o.PathJ})
	}
	return nil
}
