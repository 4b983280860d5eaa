package fsstore

import (
	"aipm/fsstore/internal/storage"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Delegation states (DESIGN section 10, seed 002).
const (
	DlgPending    = "pending"
	DlgProcessing = "processing"
	DlgCompleted  = "completed"
	DlgFailed     = "failed"
)

// dlgTransitions is the one table of delegation state changes.
var dlgTransitions = map[string][]string{
	DlgPending:    {DlgProcessing, DlgFailed}, // failed: ended with its task (endTaskDelegations)
	DlgProcessing: {DlgCompleted, DlgFailed},
}

// Delegation is delegations/<id>.json: a task session asking the same
// agent's chat session to talk to someone for it (seed 002).
type Delegation struct {
	ID string `json:"id"`
	// Agent owns the delegation: its task session made it, its chat
	// session carries it out.
	Agent   string `json:"agentId"`
	Target  string `json:"targetAgentId"`
	TaskID  string `json:"taskId"`
	Purpose string `json:"purpose"`
	Context string `json:"context,omitempty"`
	Status  string `json:"status"`
	Result  string `json:"result,omitempty"`
	// SessionID is the chat session carrying it out (processing).
	SessionID string `json:"sessionId,omitempty"`
	// Conversations started to carry it out.
	Conversations []string     `json:"conversationIds,omitempty"`
	CreatedAt     time.Time    `json:"createdAt"`
	ProcessedAt   time.Time    `json:"processedAt,omitzero"`
	CompletedAt   time.Time    `json:"completedAt,omitzero"`
	History       []Transition `json:"history"`
}

// Open says whether the delegation is still to be carried out.
func (d *Delegation) Open() bool { return d.Status == DlgPending || d.Status == DlgProcessing }

// move is the one place a delegation changes state.
func (d *Delegation) move(to, by string, now time.Time) error {
	if !slices.Contains(dlgTransitions[d.Status], to) {
		return storage.CodeErr(storage.CodeDelegationNotOpen, "delegation %s is %s and cannot become %s", d.ID, d.Status, to)
	}
	d.Status = to
	d.History = append(d.History, Transition{State: to, At: now, By: by})
	switch to {
	case DlgProcessing:
		d.ProcessedAt = now
	case DlgCompleted, DlgFailed:
		d.CompletedAt = now
	}
	return nil
}

// NewDelegation is what delegate_to_chat_session asks for.
type NewDelegation struct {
	Agent, TaskID, Target, Purpose, Context string
}

// Create checks and writes a pending delegation for agent's task.
// The target must be an agent of the project other than agent.
func (db DelegationBook) Create(ctx context.Context, cfg *storage.Config, in NewDelegation) (Delegation, error) {
	s := db.s
	if in.Target == in.Agent {
		return Delegation{}, storage.CodeErr(storage.CodeCannotMessageSelf, "you cannot delegate talking to yourself (%s): name the agent your chat session should talk to", in.Agent)
	}
	if err := s.checkRecipient(cfg, in.Agent, in.Target); err != nil {
		return Delegation{}, err
	}
	if strings.TrimSpace(in.Purpose) == "" {
		return Delegation{}, storage.CodeErr(storage.CodePurposeRequired, "purpose is empty: say what your chat session should tell or ask %s", in.Target)
	}
	if err := storage.CheckText("purpose", in.Purpose); err != nil {
		return Delegation{}, err
	}
	if err := storage.CheckText("context", in.Context); err != nil {
		return Delegation{}, err
	}
	if in.TaskID == "" {
		return Delegation{}, storage.CodeErr(storage.CodeTaskRequired, "this session has no task: delegations belong to a task")
	}
	now := time.Now().UTC()
	d := Delegation{
		ID: storage.NewID(storage.PrefixDelegation), Agent: in.Agent, Target: in.Target, TaskID: in.TaskID,
		Purpose: in.Purpose, Context: in.Context, Status: DlgPending, CreatedAt: now,
		History: []Transition{{State: DlgPending, At: now, By: in.Agent}},
	}
	path, _ := s.files.DocPath(storage.Delegations, d.ID)
	_, err := storage.UpdateDoc(ctx, s.files, path, storage.ModeFile, func(doc *Delegation, exists bool) error {
		if exists {
			return fmt.Errorf("delegation %s: %w", d.ID, storage.ErrExists)
		}
		*doc = d
		return nil
	})
	return d, err
}

// delegation reads one delegation; a malformed or unknown id is
// delegation_not_found.
func (s *Store) delegation(id string) (Delegation, error) {
	path, err := s.files.DocPath(storage.Delegations, id)
	if err != nil {
		return Delegation{}, storage.CodeErr(storage.CodeDelegationNotFound, "%v", err)
	}
	var d Delegation
	if err := s.files.ReadDoc(path, &d); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return Delegation{}, storage.CodeErr(storage.CodeDelegationNotFound, "delegation %s does not exist: check the id (process_delegation and pending_delegations carry it)", id)
		}
		return Delegation{}, err
	}
	return d.served(s.files.Rel(path)), nil
}

// DelegationFilter selects delegations; empty fields match everything.
type DelegationFilter struct {
	Agent   string   // the owner
	TaskIDs []string // any of these tasks
	Open    bool     // pending or processing only
	Status  string
}

func (f DelegationFilter) match(d Delegation) bool {
	return (f.Agent == "" || d.Agent == f.Agent) &&
		(len(f.TaskIDs) == 0 || slices.Contains(f.TaskIDs, d.TaskID)) &&
		(!f.Open || d.Open()) &&
		(f.Status == "" || d.Status == f.Status)
}

// List lists the delegations that match f, oldest first. Unreadable
// documents are skipped (doctor reports them).
func (db DelegationBook) List(f DelegationFilter) ([]Delegation, error) {
	s := db.s
	var out []Delegation
	err := storage.EachDoc(s.files, storage.Delegations, func(path string, d Delegation) error {
		if f.match(d) {
			out = append(out, d.served(s.files.Rel(path)))
		}
		return nil
	})
	return out, err
}

// waitsForChat says whether a chat session (other than the one with id
// current) should take d: it is pending, or processing by a session that
// is no longer live. Only while its task is in progress: the delegation
// of a task since stopped waits (or was ended with it).
func (s *Store) waitsForChat(d Delegation, current string) bool {
	if t, err := s.Task(d.TaskID); err != nil || t.Status != StatusInProgress {
		return false
	}
	switch {
	case d.Status == DlgPending:
		return true
	case d.Status != DlgProcessing || d.SessionID == current:
		return false
	}
	ses, err := s.session(d.SessionID)
	return err != nil || !ses.EndedAt.IsZero() || !ses.live(time.Now())
}

// endTaskDelegations ends the open delegations of task, which was just
// interrupted (WriteInterrupt) or left in_progress (UpdateTask, and
// EndStopped for a hand edit): each becomes failed, its result saying
// why, so that no chat session carries out work for a task that stopped
// and none waits for ever. A delegation ends when its task ends, whatever
// ends it (done, cancelled, blocked, or moved back): a task resumed later
// starts a new task session, which delegates afresh. The agent's chat
// session that had taken one is told to stop.
func (s *Store) endTaskDelegations(ctx context.Context, task Task, by, why string) error {
	open, err := s.Delegations().List(DelegationFilter{TaskIDs: []string{task.ID}, Open: true})
	if err != nil {
		return err
	}
	for _, d := range open {
		var taken bool
		ended, err := s.updateDelegation(ctx, d.ID, func(d *Delegation, now time.Time) error {
			if !d.Open() {
				return storage.ErrNoChange
			}
			taken = d.Status == DlgProcessing
			d.Result = "ended with its task: " + why
			return d.move(DlgFailed, by, now)
		})
		if err != nil {
			return fmt.Errorf("end delegation %s: %w", d.ID, err)
		}
		if !taken || ended.Status != DlgFailed {
			continue
		}
		n := Notification{Type: storage.NotifyInfo, From: by, Key: "delegation-ended:" + ended.ID, Message: fmt.Sprintf(
			"Delegation %s (to %s, for task %s) ended with its task: %s Stop carrying it out; there is nothing to report.", ended.ID, ended.Target, task.ID, why)}
		if _, err := s.Notify(ctx, ended.Agent, n); err != nil {
			return fmt.Errorf("end delegation %s: %w", ended.ID, err)
		}
	}
	return nil
}

// EndStopped ends the open delegations whose task, among tasks, is no
// longer in progress (endTaskDelegations): what the watcher applies when a
// task's status was changed by a hand edit of its file, which no aipm
// call saw. It lists the delegations once.
func (db DelegationBook) EndStopped(ctx context.Context, tasks []Task) error {
	s := db.s
	open, err := db.List(DelegationFilter{Open: true})
	if err != nil || len(open) == 0 {
		return err
	}
	byID := make(map[string]Task, len(tasks))
	for _, t := range tasks {
		byID[t.ID] = t
	}
	done := map[string]bool{}
	for _, d := range open {
		t, ok := byID[d.TaskID]
		if !ok || t.Status == StatusInProgress || done[t.ID] {
			continue
		}
		done[t.ID] = true
		by := cmp.Or(t.StatusChangedBy, HandEdit)
		if t.handEdited() {
			by = HandEdit
		}
		if err := s.endTaskDelegations(ctx, t, by, fmt.Sprintf("%s set task %s to %s.", by, t.ID, t.Status)); err != nil {
			return err
		}
	}
	return nil
}

// updateDelegation is the locked read-change-write of one delegation.
func (s *Store) updateDelegation(ctx context.Context, id string, fn func(d *Delegation, now time.Time) error) (Delegation, error) {
	if _, err := s.delegation(id); err != nil {
		return Delegation{}, err
	}
	path, _ := s.files.DocPath(storage.Delegations, id)
	return storage.UpdateDoc(ctx, s.files, path, storage.ModeFile, func(d *Delegation, exists bool) error {
		if !exists {
			return storage.CodeErr(storage.CodeDelegationNotFound, "delegation %s does not exist", id)
		}
		return fn(d, time.Now().UTC())
	})
}

// takeDelegation gives agent's delegation to chat session ses: a pending
// one becomes processing; a processing one whose session has ended is
// taken over (its state stays, the history says so). False when another
// session took it first.
func (s *Store) takeDelegation(ctx context.Context, ses Session, id string) (Delegation, bool, error) {
	took := false
	d, err := s.updateDelegation(ctx, id, func(d *Delegation, now time.Time) error {
		if d.Agent != ses.Agent || !s.waitsForChat(*d, ses.ID) {
			return storage.ErrNoChange
		}
		took = true
		if d.Status == DlgProcessing {
			d.History = append(d.History, Transition{State: DlgProcessing, At: now, By: ses.Agent, Reason: "taken over from " + d.SessionID})
			d.SessionID = ses.ID
			return nil
		}
		d.SessionID = ses.ID
		return d.move(DlgProcessing, ses.Agent, now)
	})
	return d, took, err
}

// Complete closes agent's delegation id with status (completed or
// failed) and result. Only its owner may; a pending one is taken first.
func (db DelegationBook) Complete(ctx context.Context, agent, id, status, result string) (Delegation, error) {
	s := db.s
	if status == "" {
		status = DlgCompleted
	}
	if status != DlgCompleted && status != DlgFailed {
		return Delegation{}, storage.CodeErr(storage.CodeInvalidStatus, "status %q is invalid: use completed or failed", status)
	}
	if strings.TrimSpace(result) == "" {
		return Delegation{}, storage.CodeErr(storage.CodeResultRequired, "result is empty: say what came of it (the answer, or why it failed); the task session reads it")
	}
	if err := storage.CheckText("result", result); err != nil {
		return Delegation{}, err
	}
	return s.updateDelegation(ctx, id, func(d *Delegation, now time.Time) error {
		if d.Agent != agent {
			return storage.CodeErr(storage.CodeNotDelegationOwner, "delegation %s belongs to %s, not you: you can report only your own delegations", d.ID, d.Agent)
		}
		if d.Status == DlgPending {
			if err := d.move(DlgProcessing, agent, now); err != nil {
				return err
			}
		}
		if err := d.move(status, agent, now); err != nil {
			return storage.CodeErr(storage.CodeDelegationNotOpen, "delegation %s is already %s: there is nothing more to report", d.ID, d.Status)
		}
		d.Result = result
		return nil
	})
}

// delegationFor finds the delegation a conversation from agent to target
// carries out: the given one (which must be agent's, open, and for target),
// or agent's one processing delegation for target, if exactly one.
func (s *Store) delegationFor(agent, target, id string) (*Delegation, error) {
	if id != "" {
		d, err := s.delegation(id)
		if err != nil {
			return nil, err
		}
		switch {
		case d.Agent != agent:
			return nil, storage.CodeErr(storage.CodeNotDelegationOwner, "delegation %s belongs to %s, not you", d.ID, d.Agent)
		case !d.Open():
			return nil, storage.CodeErr(storage.CodeDelegationNotOpen, "delegation %s is already %s", d.ID, d.Status)
		case d.Target != target:
			return nil, storage.CodeErr(storage.CodeDelegationTargetMismatch, "delegation %s is to talk to %s, not %s", d.ID, d.Target, target)
		}
		return &d, nil
	}
	ds, err := s.Delegations().List(DelegationFilter{Agent: agent, Status: DlgProcessing})
	if err != nil {
		return nil, err
	}
	var match []Delegation
	for _, d := range ds {
		if d.Target == target {
			match = append(match, d)
		}
	}
	if len(match) == 1 {
		return &match[0], nil
	}
	return nil, nil
}

// recordConversation notes that conversation cnv carries out delegation id.
func (s *Store) recordConversation(ctx context.Context, id, cnv string) error {
	_, err := s.updateDelegation(ctx, id, func(d *Delegation, _ time.Time) error {
		if slices.Contains(d.Conversations, cnv) {
			return storage.ErrNoChange
		}
		d.Conversations = append(d.Conversations, cnv)
		return nil
	})
	return err
}

// TaskConversations are the conversations and delegations of a task and
// its parent (get_task).
type TaskConversations struct {
	TaskIDs       []string       `json:"task_ids"`
	Delegations   []Delegation   `json:"delegations"`
	Conversations []Conversation `json:"conversations"`
}

// TaskConversations returns the delegations and conversations of task id
// and of its parent, oldest first, with due conversation timeouts applied.
func (db DelegationBook) TaskConversations(ctx context.Context, cfg *storage.Config, id string) (TaskConversations, error) {
	s := db.s
	t, err := s.Task(id)
	if err != nil {
		return TaskConversations{}, err
	}
	out := TaskConversations{TaskIDs: []string{t.ID}, Delegations: []Delegation{}, Conversations: []Conversation{}}
	if t.ParentID != "" {
		out.TaskIDs = append(out.TaskIDs, t.ParentID)
	}
	ds, err := s.Delegations().List(DelegationFilter{TaskIDs: out.TaskIDs})
	if err != nil {
		return out, err
	}
	out.Delegations = append(out.Delegations, ds...)
	var ids []string
	if err := storage.EachDoc(s.files, storage.Conversations, func(_ string, c Conversation) error {
		if slices.Contains(out.TaskIDs, c.TaskID) {
			ids = append(ids, c.ID)
		}
		return nil
	}); err != nil {
		return out, err
	}
	for _, cid := range ids {
		c, err := s.conversation(ctx, cfg, cid)
		if err != nil {
			continue
		}
		out.Conversations = append(out.Conversations, c)
	}
	return out, nil
}

// DelegationBook is delegations/: what task sessions asked their agent's
// chat session to do (DESIGN section 10), and the conversations that came
// of it.
type DelegationBook struct{ s *Store }

// Delegations is the project's delegations from task sessions to chat sessions.
func (s *Store) Delegations() DelegationBook { return DelegationBook{s: s} }
