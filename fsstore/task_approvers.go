package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"fmt"
	"slices"
	"strings"
)

// askedToApprove are the humans a task request by requester for agent asks
// for approval: the requester's human ancestors, or, if it has none, the
// agent's, or, if neither has one, the managers, or else every human;
// never the requester itself.
func askedToApprove(c *storage.Config, requester, agent string) []string {
	asked := c.HumanAncestors(requester)
	if len(asked) == 0 {
		asked = c.HumanAncestors(agent)
	}
	not := func(h string) bool { return h == requester }
	if asked = slices.DeleteFunc(asked, not); len(asked) == 0 {
		asked = slices.DeleteFunc(c.Humans(true), not)
	}
	if len(asked) == 0 {
		asked = slices.DeleteFunc(c.Humans(false), not)
	}
	return asked
}

// approversOf are the humans who may approve or reject task t while it
// waits for approval (DESIGN section 11): only the humans its request
// asked (askedToApprove, recorded on the task when the request was made;
// for a task that records none, the ones a request would ask), never its
// requester.
func approversOf(c *storage.Config, t Task) []string {
	out := slices.Clone(t.AskedToApprove)
	if len(out) == 0 {
		out = askedToApprove(c, t.Requester, t.Assignee)
	}
	out = slices.DeleteFunc(out, func(h string) bool { return h == t.Requester })
	slices.Sort(out)
	return slices.Compact(out)
}

// checkApprover is the one check that `by` may approve or reject task t,
// which must be waiting for approval (otherwise applyApproval says so).
func checkApprover(c *storage.Config, t Task, by string) error {
	if t.ApprovalStatus != ApprovalPending {
		return nil
	}
	approvers := approversOf(c, t)
	if slices.Contains(approvers, by) {
		return nil
	}
	why := "it is not one of the humans asked to decide it"
	switch a, _ := c.Agent(by); {
	case by == t.Requester:
		why = "a requester never decides its own request"
	case a.Type != storage.AgentHuman:
		why = "only a human decides a task request"
	}
	who := "nobody can decide it: add a human with --role manager (aipm agent set ID --role manager)"
	if len(approvers) > 0 {
		who = fmt.Sprintf("ask %s to decide it (aipm task approve %s --as %s, or aipm task reject)", strings.Join(approvers, " or "), t.ID, approvers[0])
	}
	return storage.CodeErr(storage.CodeNotApprover, "%s may not approve or reject task %s: %s; %s", by, t.ID, why, who)
}

// askToApprove sends each of humans a system message about task id: what
// (a sentence) and how to decide it. It returns the humans it reached
// (never nil) and, for each it did not, "id (why)".
func (s *Store) askToApprove(ctx context.Context, cfg *storage.Config, humans []string, id, what string) (asked, failed []string) {
	asked = []string{}
	msg := fmt.Sprintf("%s Approve it with `aipm task approve %s`, or reject it with `aipm task reject %s --reason \"...\"`.", what, id, id)
	for _, h := range humans {
		if _, err := s.Send(ctx, cfg, OutgoingMessage{From: storage.SystemSender, To: h, Content: msg, RelatedTaskID: id, Kind: KindSystem}); err != nil {
			failed = append(failed, fmt.Sprintf("%s (%v)", h, err))
			continue
		}
		asked = append(asked, h)
	}
	return asked, failed
}

// Decide approves or rejects the task id asks for (or its pending change)
// as human by (aipm task approve|reject, aipm web): the task is updated
// and, when a requested task is rejected, the AI agent that would have
// done the work (the assignee, else the requester), if it is not the one
// deciding, is told not to start it; notified names it. A rejected change
// request leaves the task as it was: there is no request to call off.
func (s *Store) Decide(ctx context.Context, cfg *storage.Config, id, by, approval, reason string) (t Task, notified string, err error) {
	if approval != ApprovalApproved && approval != ApprovalRejected {
		return Task{}, "", fmt.Errorf("approval %q is neither %s nor %s: %w", storage.Clip(approval, 40), ApprovalApproved, ApprovalRejected, storage.ErrInvalid)
	}
	before, _ := s.Task(id)
	if t, err = s.UpdateTask(ctx, cfg, id, by, TaskChange{Approval: approval, Reason: reason}); err != nil {
		return t, "", err
	}
	if approval != ApprovalRejected || before.PendingChange != nil {
		return t, "", nil
	}
	var a storage.Agent
	for _, id := range []string{t.Assignee, t.Requester} {
		if c, ok := cfg.Agent(id); ok && c.Type == storage.AgentAI && c.ID != by {
			a = c
			break
		}
	}
	if a.ID == "" {
		return t, "", nil
	}
	if reason == "" {
		reason = "no reason given"
	}
	msg := fmt.Sprintf("%s rejected your task request %s (%q): %s. Do not start it; ask %s in chat if you disagree.", by, t.ID, t.Title, reason, by)
	// About no task: a rejected task never has a session of its own, and a
	// notification about a task waits for one (Notification.concerns).
	if _, err := s.Notify(ctx, a.ID, Notification{Type: storage.NotifyInfo, From: by, Message: msg}); err != nil {
		return t, "", fmt.Errorf("task %s rejected, but %s was not told: %w", t.ID, a.ID, err)
	}
	return t, a.ID, nil
}
