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
func (s *Store) claimableBy(cfg *storage.Config, agent string, limit int) ([]string, error) {
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
		if mayClaim(cfg, e.flow.group, agent) {
			ids = append(ids, e.id)
		}
	}
	return ids, nil
}

// Claim gives agent the ready task id nobody is assigned, or, with id "",
// the first it may claim (claimableBy): the task goes in progress for it.
// An agent claims one task at a time: one with a task in progress is
// refused.
func (s *Store) Claim(ctx context.Context, cfg *storage.Config, agent, id string) (Task, error) {
	a, ok := cfg.Agent(agent)
	if !ok || a.Type != storage.AgentAI {
		return Task{}, storage.CodeErr(storage.CodeInvalidTransition, "only an AI agent of the project claims a task, and %q is not one: a human assigns it (aipm task assign TASK AGENT)", storage.Clip(agent, storage.MaxEchoedID))
	}
	if cur := s.taskInProgress(agent); cur != "" {
		return Task{}, storage.CodeErr(storage.CodeInvalidTransition, "you have task %s in progress: finish it (report_completed) before you claim another", cur)
	}
	if id != "" {
		return s.claim(ctx, cfg, agent, id)
	}
	ids, err := s.claimableBy(cfg, agent, 0)
	if err != nil {
		return Task{}, err
	}
	for _, id := range ids {
		t, err := s.claim(ctx, cfg, agent, id)
		var coded *storage.CodeError
		if errors.As(err, &coded) && (coded.Code == storage.CodeTaskTaken || coded.Code == storage.CodeTaskNotReady) {
			continue // another claimant, or a change, was first: the next one
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
	case t.Status != StatusTodo || t.ApprovalStatus != ApprovalApproved:
		return storage.CodeErr(storage.CodeTaskNotReady, "task %s is %s (%s), not a todo task ready to start: claim another", t.ID, t.Status, t.ApprovalStatus)
	}
	if waits := s.waitsNow(*t); len(waits) > 0 {
		return storage.CodeErr(storage.CodeTaskNotReady, "task %s waits for %s: claim it once they are done, or claim another", t.ID, WaitsText(waits))
	}
	t.Assignee = agent
	if err := applyStatus(t, StatusInProgress, "", agent, now); err != nil {
		return err
	}
	t.AipmStatus, t.UpdatedAt = t.Status, now
	return nil
}

// waitsNow is what t, as read, waits for, by the index's view of the
// other tasks.
func (s *Store) waitsNow(t Task) []Wait {
	ix := &s.caches.tasks
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := s.refreshTasks(ix); err != nil {
		return []Wait{{TaskID: t.ID, Status: "unreadable"}}
	}
	return ix.waitsOf(entryOf(t))
}

// claimOffer is the one rule of the task an idle chat session of agent is
// offered to claim (get_next_action, DESIGN section 20), if any: the first
// it may claim, when it has no task in progress. grouped keeps only tasks
// that name a group: the look without a session (the watcher deciding
// whom to start) asks for those, so that an agent is started for work put
// in its group's queue, not for every task nobody is assigned yet.
func (s *Store) claimOffer(cfg *storage.Config, agent string, grouped bool) *Task {
	ids, err := s.claimableBy(cfg, agent, 0)
	if err != nil {
		return nil
	}
	for _, id := range ids {
		t, err := s.Task(id)
		if err != nil || (grouped && t.Group == "") {
			continue
		}
		if s.taskInProgress(agent) != "" {
			return nil
		}
		return &t
	}
	return nil
}
