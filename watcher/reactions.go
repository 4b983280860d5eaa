package watcher

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"aipm/fsstore"
)

// Pass is one reconcile pass: the state read once at its start, shared by
// the reactions. Events are hints; every pass reads the files again, so a
// restarted watcher needs nothing but the files.
type Pass struct {
	Ctx   context.Context
	Cfg   *fsstore.Config
	Now   time.Time
	Live  []fsstore.Session
	Runs  []fsstore.Run
	Tasks []fsstore.Task
	// due is the earliest moment a later pass must run without any file
	// changing (a deadline); zero if none.
	due time.Time
}

// Due asks for a pass at t.
func (p *Pass) Due(t time.Time) {
	if !t.IsZero() && (p.due.IsZero() || t.Before(p.due)) {
		p.due = t
	}
}

// liveSession returns agent's live session of purpose, if any.
func (p *Pass) liveSession(agent, purpose string) (fsstore.Session, bool) {
	for _, s := range p.Live {
		if s.Agent == agent && s.Purpose == purpose {
			return s, true
		}
	}
	return fsstore.Session{}, false
}

// running says whether a started process holds agent's purpose.
func (p *Pass) running(agent, purpose string) bool {
	for _, r := range p.Runs {
		if r.Agent == agent && r.Purpose == purpose && r.Alive() {
			return true
		}
	}
	return false
}

// A Reaction is one small function from the state of a pass to what to
// write. Each is idempotent: a second run over the same files writes
// nothing. New reactions are one more entry in reactions.
type Reaction struct {
	Name string
	Run  func(d *Daemon, p *Pass) error
}

// reactions run in this order on every pass.
var reactions = []Reaction{
	{"session deadlines", reactSessions},
	{"finished runs", reactRuns},
	{"runs that never authenticate", reactAuthDeadline},
	{"conversation deadlines", reactConversations},
	{"trigger deadlines", reactTriggerTTL},
	{"work that flows", reactFlow},
	{"triggers", reactTriggers},
	{"interrupts", reactInterrupts},
	{"ended tasks' delegations", reactEndedTasks},
	{"starts", reactStarts},
	{"compaction", reactCompaction},
}

// reactSessions ends sessions that expired or whose process is gone, and
// asks for a pass when the next one expires.
func reactSessions(d *Daemon, p *Pass) error {
	if err := d.store.SweepSessions(p.Ctx); err != nil {
		return err
	}
	live, err := d.store.LiveSessions(p.Now)
	if err != nil {
		return err
	}
	p.Live = live
	for _, s := range live {
		p.Due(s.LastSeenAt.Add(s.Idle.Duration))
	}
	return nil
}

// reactRuns releases the records of started processes that are gone
// without this watcher seeing them exit (started by a previous watcher):
// their sessions end.
func reactRuns(d *Daemon, p *Pass) error {
	runs, err := d.store.Runs().List()
	if err != nil {
		return err
	}
	p.Runs = p.Runs[:0]
	for _, r := range runs {
		if d.starter.owns(r) || d.store.Runs().Live(r) {
			p.Runs = append(p.Runs, r)
			if !d.starter.owns(r) {
				p.Due(p.Now.Add(adoptedPoll)) // nobody waits on it: look again
			}
			continue
		}
		d.log.Info("agent process gone", "agent", r.Agent, "purpose", r.Purpose, "pid", r.PID, "run", r.ID)
		if err := d.store.Runs().Release(p.Ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// reactAuthDeadline stops a process this watcher started that has not
// authenticated within [defaults] authenticate_within: a client that
// cannot reach its model (a wrong endpoint, no login) never makes its
// first tool call, and would otherwise run, or retry, for ever. Its exit
// then tells its human why (starter.finished).
func reactAuthDeadline(d *Daemon, p *Pass) error {
	within := p.Cfg.Defaults.AuthenticateWithin.Duration
	for _, pr := range d.starter.running {
		if pr.authenticated || pr.stoppedFor != "" {
			continue
		}
		if d.starter.authenticated(pr, p.Live) {
			pr.authenticated = true
			continue
		}
		deadline := pr.run.StartedAt.Add(within)
		if p.Now.Before(deadline) {
			p.Due(deadline)
			continue
		}
		d.starter.stopUnauthenticated(pr, within)
	}
	return nil
}

// adoptedPoll is how often a run this watcher did not start (it has no
// exit notice for it) is checked.
const adoptedPoll = time.Second

// reactConversations applies due conversation timeouts (listing does) and
// asks for a pass at the next deadline.
func reactConversations(d *Daemon, p *Pass) error {
	convs, err := d.store.Conversations().List(p.Ctx, p.Cfg, false)
	if err != nil {
		return err
	}
	for _, c := range convs {
		p.Due(c.Deadline(p.Cfg))
	}
	return nil
}

// reactTriggerTTL removes triggers nobody took within trigger_ttl and says
// so in a system message to the agent's parent (or, without one, to the
// project's humans), so that the one who asked learns it.
func reactTriggerTTL(d *Daemon, p *Pass) error {
	triggers, err := d.store.Triggers().Pending()
	if err != nil {
		return err
	}
	ttl := p.Cfg.Defaults.TriggerTTL.Duration
	for _, t := range triggers {
		expired, ok, err := d.store.Triggers().Expire(p.Ctx, t.Agent, t.Purpose, ttl, p.Now)
		if err != nil {
			return err
		}
		if !ok {
			p.Due(expired.CreatedAt.Add(ttl))
			continue
		}
		d.log.Warn("trigger expired", "agent", t.Agent, "purpose", t.Purpose, "reason", t.Reason, "ttl", ttl)
		text := fmt.Sprintf("aipm: %s was not started for %s (%s) within %s: nobody took the trigger. Is aipm watch running, and does %s have a command and a saved passkey?", t.Agent, t.Purpose, t.Reason, ttl, t.Agent)
		for _, h := range p.Cfg.TellWhom(t.Agent) {
			if _, err := d.store.Send(p.Ctx, p.Cfg, fsstore.OutgoingMessage{From: fsstore.SystemSender, To: h, Content: text, Kind: fsstore.KindSystem}); err != nil {
				d.log.Error("trigger expiry message", "to", h, "err", err)
			}
		}
	}
	return nil
}

// reactTriggers writes pending/<agent>.<purpose>.json for every AI agent
// that has work of a purpose (the one rule, Store.Work, asked without a
// session) and no live session or started process of that purpose.
// Inbound chat, pending conversations, tasks set in progress and pending
// delegations all arrive here.
func reactTriggers(d *Daemon, p *Pass) error {
	for _, a := range p.Cfg.Agents {
		if a.Type != fsstore.AgentAI {
			continue
		}
		for _, purpose := range []string{fsstore.PurposeTask, fsstore.PurposeChat} {
			if _, ok := p.liveSession(a.ID, purpose); ok || p.running(a.ID, purpose) {
				continue
			}
			next, err := d.store.Work(p.Ctx, p.Cfg, a.ID, purpose, nil)
			if err != nil {
				return fmt.Errorf("%s %s: %w", a.ID, purpose, err)
			}
			p.Due(next.Until)
			if !next.StartsSession(purpose) || d.claimTaken(p, next) {
				continue
			}
			t := fsstore.Trigger{Agent: a.ID, Purpose: purpose, Reason: next.Action}
			if purpose == fsstore.PurposeTask {
				t.TaskID, t.Reason = next.Task.ID, "task in progress"
			}
			wrote, err := d.store.Triggers().Add(p.Ctx, t)
			if err != nil {
				return err
			}
			if wrote {
				d.log.Info("trigger written", "agent", a.ID, "purpose", purpose, "reason", t.Reason, "task", t.TaskID)
			}
		}
	}
	return nil
}

// reactFlow applies the rules of work that flows (DESIGN section 20) to
// every task as its file says (fsstore's Flow): a task whose blockers are
// all done goes in progress, and the triggers reaction after it starts the
// assignee; a stop made by hand is told to those who wait on it. A change
// through aipm did both itself; this is for a hand edit, and for a process
// killed between a change and the start it owes. A dependency cycle a hand edit made is logged and told to the
// project's humans, once while it lasts (a restarted watcher included).
func reactFlow(d *Daemon, p *Pass) error {
	started, err := d.store.Flow(p.Ctx, p.Cfg)
	for _, t := range started {
		d.log.Info("task ready, set in progress", "task", t.ID, "assignee", t.Assignee)
	}
	cycles, cerr := d.store.Cycles()
	seen := map[string]bool{}
	for _, c := range cycles {
		seen[c] = true
		if d.cycles[c] {
			continue
		}
		d.cycles[c] = true
		d.log.Error("dependency cycle", "problem", c)
		text := "aipm: " + c + "."
		for _, h := range p.Cfg.Humans(false) {
			if !d.cyclesLooked && d.toldLately(h, text) {
				continue // told by a watcher before this one
			}
			if _, err := d.store.Send(p.Ctx, p.Cfg, fsstore.OutgoingMessage{From: fsstore.SystemSender, To: h, Content: text, Kind: fsstore.KindSystem}); err != nil {
				d.log.Error("dependency cycle message", "to", h, "err", err)
			}
		}
	}
	for c := range d.cycles {
		if !seen[c] {
			delete(d.cycles, c)
		}
	}
	d.cyclesLooked = d.cyclesLooked || cerr == nil
	return errors.Join(err, cerr)
}

// toldWindow is how many of a human's latest messages toldLately looks
// through.
const toldWindow = 100

// toldLately says whether aipm's message text is among the latest
// messages of human's chat (toldWindow, read from its end at a bounded
// cost). A watcher's first look at the cycles asks it, so that a
// restarted watcher, or aipm watch --once run from cron, does not tell a
// cycle again that a watcher before it told.
func (d *Daemon) toldLately(human, text string) bool {
	msgs, err := d.store.Tail(human, toldWindow)
	if err != nil {
		return false // telling again is better than not at all
	}
	return slices.ContainsFunc(msgs, func(m fsstore.Message) bool {
		return m.SenderID == fsstore.SystemSender && m.Kind == fsstore.KindSystem && m.Content == text
	})
}

// claimTaken says whether the claim next offers is being taken by an agent
// this watcher started for it already (within the trigger TTL, in which a
// started agent claims or gives up): one queued task starts one agent of
// its group, not all of them. It records the offer it lets through.
func (d *Daemon) claimTaken(p *Pass, next fsstore.Next) bool {
	if next.Action != fsstore.ActClaimTask || next.Task == nil {
		return false
	}
	for id, at := range d.claims {
		if p.Now.Sub(at) > p.Cfg.Defaults.TriggerTTL.Duration {
			delete(d.claims, id)
		}
	}
	if _, ok := d.claims[next.Task.ID]; ok {
		return true
	}
	d.claims[next.Task.ID] = p.Now
	return false
}

// reactInterrupts interrupts an agent whose task was set to blocked or
// cancelled by someone else while the agent works on it (a live task
// session on that task). A change made through aipm (UpdateTask) wrote its
// interrupt itself; the watcher adds one for a hand edit of the task file,
// which it recognises by the status having changed without
// statusChangedAt: one per such edit (keyed by the edit, HandEditKey). A
// change it sees first (a restarted watcher) may have been made through
// aipm: then an interrupt about the task written since the session began
// means it was done.
func reactInterrupts(d *Daemon, p *Pass) error {
	for _, t := range p.Tasks {
		if !fsstore.StopsWork(t.Status) {
			continue
		}
		ses, ok := p.liveSession(t.Assignee, fsstore.PurposeTask)
		if !ok || ses.TaskID != t.ID {
			continue
		}
		by := t.StatusChangedBy
		prev, seen := d.tasks[t.ID]
		unlessSince := time.Time{}
		switch {
		case !seen:
			// First look (a restarted watcher): the change may be a hand
			// edit made while no watcher ran, or a change through aipm.
			unlessSince = ses.CreatedAt
		case prev.Status == t.Status:
			continue // no change since the last pass
		case prev.StatusChangedAt.Equal(t.StatusChangedAt):
			by = handEdit
		default:
			continue // changed through aipm, which wrote its own interrupt
		}
		before := t
		before.Status = fsstore.StatusInProgress
		if !fsstore.Interrupts(before, t, by) {
			continue
		}
		from := by
		if by == handEdit {
			from = "" // nobody known: the file was edited by hand
		}
		in := fsstore.Interruption{Agent: t.Assignee, By: from, Task: &t, StatusChange: true, UnlessSince: unlessSince, HandEdit: true}
		if _, wrote, err := d.store.WriteInterrupt(p.Ctx, in); err != nil {
			return err
		} else if !wrote {
			continue
		}
		d.log.Info("interrupt written", "agent", t.Assignee, "task", t.ID, "status", t.Status, "by", by)
	}
	return nil
}

// reactEndedTasks ends the open delegations of a task that left
// in_progress (a delegation ends when its task ends): a change through aipm
// ended them itself, so this is for a hand edit of the task file, or a
// change made while no watcher ran (the first pass looks at every task).
func reactEndedTasks(d *Daemon, p *Pass) error {
	for _, t := range p.Tasks {
		prev, seen := d.tasks[t.ID]
		if t.Status != fsstore.StatusInProgress && (!seen || prev.Status == fsstore.StatusInProgress) {
			return d.store.Delegations().EndStopped(p.Ctx, p.Tasks)
		}
	}
	return nil
}

// handEdit is who changed a task file by hand, as far as anyone knows.
const handEdit = fsstore.HandEdit

// reactStarts starts the command of each agent with a pending trigger.
func reactStarts(d *Daemon, p *Pass) error {
	if d.once {
		return nil
	}
	triggers, err := d.store.Triggers().Pending()
	if err != nil {
		return err
	}
	for _, t := range triggers {
		a, ok := p.Cfg.Agent(t.Agent)
		if !ok || len(a.Command) == 0 || p.running(t.Agent, t.Purpose) {
			continue
		}
		if until := d.starter.start(p.Ctx, p.Cfg, a, t); !until.IsZero() {
			p.Due(until)
		}
	}
	return nil
}

// loadTasks reads every task, reporting each unreadable or invalid file
// (path:line: error) once per distinct error; an invalid file is ignored
// as if it were not there, so a bad hand edit changes nothing.
func (d *Daemon) loadTasks(p *Pass) error {
	tasks, _, bad, err := d.store.Tasks(fsstore.TaskFilter{})
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	report := func(key string, err error) {
		seen[key] = true
		if d.bad[key] != err.Error() {
			d.bad[key] = err.Error()
			d.log.Error("invalid file ignored", "err", err)
		}
	}
	for _, e := range bad {
		report(e.Error(), e)
	}
	p.Tasks = p.Tasks[:0]
	for _, t := range tasks {
		if err := fsstore.CheckStatus(t.Status); err != nil {
			path, _ := d.store.DocPath(fsstore.Tasks, t.ID)
			report(path, fmt.Errorf("%s: %w", d.store.Rel(path), err))
			continue
		}
		p.Tasks = append(p.Tasks, t)
	}
	for k := range d.bad {
		if !seen[k] {
			delete(d.bad, k)
		}
	}
	return nil
}
