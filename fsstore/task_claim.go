package fsstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"aipm/fsstore/internal/storage"
	"aipm/internal/failpoint"
)

// The ready queue (DESIGN section 20): a ready task nobody is assigned can
// be claimed by an AI agent of the group it names, or by any AI agent when
// it names none. The claim is a compare-and-swap under the tasks lock, so
// exactly one claimant gets a task whatever races, crashes or hand edits:
// the task goes in progress for it, and the watcher starts its task
// session as for any task in progress.

// failpointClaimUnwritten (internal/failpoint) is the moment a claim is
// decided, before the claimed task is written: a claimant killed there
// has claimed nothing.
const failpointClaimUnwritten = "task-claim-unwritten"

// checkGroup checks the group a task names for its claimants.
func checkGroup(cfg *storage.Config, group string) error {
	if group == "" {
		return nil
	}
	if _, ok := cfg.Group(group); !ok {
		return storage.CodeErr(storage.CodeGroupNotFound, "group %q is not a group of config.toml: name one of its [groups], or leave it out to let any AI agent claim the task", storage.Clip(group, storage.MaxEchoedID))
	}
	return nil
}

// mayClaim is the one rule of who may claim a task of group: an AI agent of
// the project, of that group when there is one.
func mayClaim(cfg *storage.Config, group, agent string) bool {
	a, ok := cfg.Agent(agent)
	if !ok || a.Type != storage.AgentAI {
		return false
	}
	if group == "" {
		return true
	}
	members, _ := cfg.Group(group)
	return slices.Contains(members, agent)
}

// claimOrder puts the tasks to claim first the most urgent, then the
// oldest.
func claimOrder(a, b *taskEntry) int {
	return cmp.Or(cmp.Compare(slices.Index(Priorities, b.flow.priority), slices.Index(Priorities, a.flow.priority)), strings.Compare(a.id, b.id))
}

// claimableBy are the ids of the tasks agent may claim, in the order a claim
// takes them (claimOrder): ready, nobody assigned, of a group it is in or
// of none. limit caps them (0: all).
func (s *Store) claimableBy(cfg *storage.Config, agent string, grouped bool, limit int) ([]string, error) {
	ix := &s.caches.tasks
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := s.refreshTasks(ix); err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range ix.claimable {
		if limit > 0 && len(ids) == limit {
			break
		}
		if mayClaim(cfg, e.flow.group, agent) && (!grouped || e.flow.group != "") {
			ids = append(ids, e.id)
		}
	}
	return ids, nil
}

// Claim gives agent the ready task id nobody is assigned, or, with id "",
// the first it may claim (claimableBy): the task goes in progress for it.
// An agent claims one task at a time: one with a task in progress is
// refused, judged under the tasks lock with the claim, so that two claims
// of the same agent at once cannot both pass.
func (s *Store) Claim(ctx context.Context, cfg *storage.Config, agent, id string) (Task, error) {
	a, ok := cfg.Agent(agent)
	if !ok || a.Type != storage.AgentAI {
		return Task{}, storage.CodeErr(storage.CodeInvalidTransition, "only an AI agent of the project claims a task, and %q is not one: a human assigns it (aipm task assign TASK AGENT)", storage.Clip(agent, storage.MaxEchoedID))
	}
	if id != "" {
		return s.claim(ctx, cfg, agent, id)
	}
	ids, err := s.claimableBy(cfg, agent, false, 0)
	if err != nil {
		return Task{}, err
	}
	for _, id := range ids {
		t, err := s.claim(ctx, cfg, agent, id)
		var coded *storage.CodeError
		if errors.Is(err, storage.ErrNotFound) || errors.As(err, &coded) && (coded.Code == storage.CodeTaskTaken || coded.Code == storage.CodeTaskNotReady) {
			continue // another claimant, a change or a removal was first: the next one
		}
		return t, err
	}
	return Task{}, storage.CodeErr(storage.CodeNothingToClaim, "no ready task waits for a claimant that you may take: call get_next_action and wait for work")
}

// claim is one claim of task id by agent, judged under the tasks lock.
func (s *Store) claim(ctx context.Context, cfg *storage.Config, agent, id string) (Task, error) {
	path, err := s.files.DocPath(storage.Tasks, id)
	if err != nil {
		return Task{}, err
	}
	t, err := storage.UpdateDoc(ctx, s.files, path, storage.ModeFile, func(t *Task, exists bool) error {
		if !exists {
			return storage.Kindf(storage.ErrNotFound, "task %s does not exist: see list_tasks or aipm task list", id)
		}
		if err := s.applyClaim(cfg, t, agent, time.Now().UTC()); err != nil {
			return err
		}
		failpoint.Kill(failpointClaimUnwritten)
		return nil
	})
	if err != nil {
		return Task{}, err
	}
	return t.served(s.files.Rel(path)), nil
}

// applyClaim gives t, as read under the tasks lock, to agent, or says why
// it cannot.
func (s *Store) applyClaim(cfg *storage.Config, t *Task, agent string, now time.Time) error {
	switch {
	case t.Assignee != "":
		return storage.CodeErr(storage.CodeTaskTaken, "task %s is assigned to %s already: claim another (claim_task without task_id takes the next one)", t.ID, t.Assignee)
	case t.HandStatus != "":
		return storage.CodeErr(storage.CodeTaskNotReady, "task %s was edited by hand to a status aipm does not take: a human settles it first (aipm doctor)", t.ID)
	case !mayClaim(cfg, t.Group, agent):
		return storage.CodeErr(storage.CodeTaskNotReady, "task %s is for the group %s, which you are not in: claim another", t.ID, t.Group)
	}
	v, err := s.claimView(*t, agent)
	switch {
	case err != nil:
		return err
	case v.busy != "":
		return storage.CodeErr(storage.CodeInvalidTransition, "you have task %s in progress: finish it (report_completed) before you claim another", v.busy)
	case v.ready:
	case len(v.waits) > 0:
		return storage.CodeErr(storage.CodeTaskNotReady, "task %s waits for %s: claim it once they are done, or claim another", t.ID, WaitsText(v.waits))
	default:
		return storage.CodeErr(storage.CodeTaskNotReady, "task %s is %s (%s), not a todo task ready to start: claim another", t.ID, t.Status, t.ApprovalStatus)
	}
	t.Assignee = agent
	if err := applyStatus(t, StatusInProgress, "", agent, now); err != nil {
		return err
	}
	t.AipmStatus, t.UpdatedAt = t.Status, now
	return nil
}

// claimCheck is what a claim asks of the task it takes and of the others,
// by the index's rules: whether the task is ready (the one rule, ready),
// what it waits for, and a task the claimant has in progress already ("":
// none).
type claimCheck struct {
	ready bool
	waits []Wait
	busy  string
}

// claimView judges a claim of t (as read under the tasks lock) by agent.
func (s *Store) claimView(t Task, agent string) (claimCheck, error) {
	ix := &s.caches.tasks
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := s.refreshTasks(ix); err != nil {
		return claimCheck{}, err
	}
	v := claimCheck{ready: ix.ready(entryOf(t)), waits: ix.waitsOf(entryOf(t))}
	for _, e := range ix.open {
		if e.err == nil && e.assignee == agent && e.status == StatusInProgress && e.id != t.ID {
			v.busy = e.id
			break
		}
	}
	return v, nil
}

// claimOffer is the one rule of the task an idle chat session of agent is
// offered to claim (get_next_action, DESIGN section 20), if any: the first
// it may claim among the tasks put in the queue of a group it is in, when
// it has no task in progress. A task of no group may be claimed by any AI
// agent (claim_task), but is offered to none: every task nobody is
// assigned yet would otherwise keep every chat session busy.
func (s *Store) claimOffer(cfg *storage.Config, agent string) *Task {
	if !inAGroup(cfg, agent) {
		return nil // nothing to offer, known without the task index (a fresh process's first look would read every task)
	}
	ids, err := s.claimableBy(cfg, agent, true, 1)
	if err != nil || len(ids) == 0 || s.taskInProgress(agent) != "" {
		return nil
	}
	t, err := s.Task(ids[0])
	if err != nil {
		return nil
	}
	return &t
}

// inAGroup says whether agent is in a group of config.toml: only such an
// agent is offered a claim.
func inAGroup(cfg *storage.Config, agent string) bool {
	for _, members := range cfg.Groups {
		if slices.Contains(members, agent) {
			return true
		}
	}
	return false
}
