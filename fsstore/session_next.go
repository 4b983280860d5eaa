package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"errors"
	"time"
)

// Actions of the "what should this agent do next" rule (DESIGN section 8).
const (
	ActExit                = "exit"
	ActConversationEnded   = "conversation_ended"
	ActConversationRequest = "conversation_request"
	ActProcessDelegation   = "process_delegation"
	ActGetPendingMessages  = "get_pending_messages"
	ActGetNotifications    = "get_notifications"
	ActLogout              = "logout"
	ActWork                = "work"
	// ActWait: nothing to do now; look again when something changes (see
	// WakeTargets) or at Next.Until.
	ActWait = "wait"
	// ActClaimTask: an idle chat session may claim Next.Task, a ready task
	// nobody is assigned (claim_task).
	ActClaimTask = "claim_task"
)

// Next is the rule's answer, with what the caller needs to explain it.
type Next struct {
	Action string
	// Reason says why a session must exit (its end reason, or the task's state).
	Reason       string
	Conversation *Conversation
	// From and More describe the unread messages (get_pending_messages);
	// First is the oldest of them (its chat command markers are named).
	From  string
	More  bool
	First *Message
	// Notifications is the number of unread notifications for the session.
	Notifications int
	Task          *Task
	// Delegation is the delegation to process (process_delegation).
	Delegation *Delegation
	// Delegations, in a task session, are the delegations of its task:
	// while one is open the session waits, and reports their progress.
	Delegations []Delegation
	// Progress, in a task session waiting on a delegation, are the
	// conversations carrying out its open delegations.
	Progress []Conversation
	// Reports, in a task session at work, are the unread completion
	// reports about its task (@@完了報告): it decides on them.
	Reports []Notification
	// Waits, in a task session waiting, are the subtasks its task waits
	// for (the parent rule, DESIGN section 20).
	Waits []Wait
	// Until, when waiting, is the earliest moment the answer can change
	// without any file changing (a conversation deadline); zero if none.
	Until time.Time
}

// IsWorkFor is the one rule of what work a new session of purpose takes
// (DESIGN sections 5 and 12): a task in progress for a task session;
// anything but waiting for a chat session.
func (n Next) IsWorkFor(purpose string) bool {
	if purpose == storage.PurposeTask {
		return n.Action == ActWork
	}
	return n.Action != ActWait
}

// StartsSession says whether the watcher must start a session of purpose
// for n: work (IsWorkFor), except the news of a conversation's end alone,
// which a session that starts anyway hears (authenticate takes it as work).
func (n Next) StartsSession(purpose string) bool {
	return n.IsWorkFor(purpose) && n.Action != ActConversationEnded
}

// Work is the one rule of what agent should do next in a session of
// purpose, in DESIGN section 8's order. ses is the session asking, or nil
// for a look without a session (authenticate choosing a purpose, the
// watcher deciding whom to start). Work changes nothing but due
// conversation timeouts and, past a long run of the agent's own sent
// copies, its committed chat cursor (a peek that advances); NextAction
// also takes what it finds.
//
// Chat: session ending -> exit; a conversation of mine ended that I have
// not been told of -> conversation_ended; a pending conversation where I
// am the participant -> conversation_request; a delegation of mine that is
// pending (or processing by a chat session that has ended) ->
// process_delegation; unread messages ->
// get_pending_messages; unread notifications for this session ->
// get_notifications; a task in the queue of a group of mine I may claim
// (and in no open conversation) -> claim_task; idle past the chat idle
// timeout (and in no open conversation) -> logout; else wait. Without a
// session: unread messages, else the claim, else wait.
//
// Task: session ending -> exit; the task gone, finished or no longer mine ->
// exit; in progress with a delegation of the task still open -> wait, with
// the delegations and their conversations as progress; in progress with
// subtasks under way that others have -> wait, naming them (the parent
// rule); in progress -> work; otherwise (moved back to todo, or blocked by me) -> wait until
// someone moves it. Without a session, the task is the agent's task in
// progress, if any.
func (s *Store) Work(ctx context.Context, cfg *storage.Config, agent, purpose string, ses *Session) (Next, error) {
	if ses != nil {
		cur, err := s.session(ses.ID)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			return Next{Action: ActExit, Reason: "session removed"}, nil
		case err != nil:
			return Next{}, err
		case !cur.EndedAt.IsZero():
			return Next{Action: ActExit, Reason: cur.EndReason}, nil
		case !cur.live(time.Now()):
			return Next{Action: ActExit, Reason: EndExpired}, nil
		}
	}
	if purpose == storage.PurposeTask {
		return s.taskWork(ctx, cfg, agent, ses)
	}
	return s.chatWork(ctx, cfg, agent, ses)
}

func (s *Store) taskWork(ctx context.Context, cfg *storage.Config, agent string, ses *Session) (Next, error) {
	id := s.taskInProgress(agent) // without a session: the task a new one would take
	if ses != nil {
		id = ses.TaskID
	}
	if id == "" {
		return Next{Action: ActExit, Reason: "no task"}, nil
	}
	t, err := s.Task(id)
	if errors.Is(err, storage.ErrNotFound) {
		return Next{Action: ActExit, Reason: "task removed"}, nil
	}
	if err != nil {
		return Next{}, err
	}
	switch {
	case t.Assignee != agent || !StatusOpen(t.Status):
		return Next{Action: ActExit, Reason: "task " + t.Status, Task: &t}, nil
	case t.Status == StatusInProgress:
		ds, err := s.Delegations().List(DelegationFilter{TaskIDs: []string{t.ID}})
		if err != nil {
			return Next{}, err
		}
		var progress []Conversation
		waiting := false
		for _, d := range ds {
			if !d.Open() {
				continue
			}
			waiting = true
			for _, id := range d.Conversations {
				if c, err := s.conversation(ctx, cfg, id); err == nil {
					progress = append(progress, c)
				}
			}
		}
		if waiting {
			return Next{Action: ActWait, Task: &t, Delegations: ds, Progress: progress}, nil
		}
		waits, err := s.subtaskWaits(t)
		if err != nil {
			return Next{}, err
		}
		if len(waits) > 0 {
			return Next{Action: ActWait, Task: &t, Delegations: ds, Waits: waits}, nil // started again when they are done
		}
		var reports []Notification
		if ses != nil {
			if reports, err = s.completionReports(ctx, *ses, t.ID); err != nil {
				return Next{}, err
			}
		}
		return Next{Action: ActWork, Task: &t, Delegations: ds, Reports: reports}, nil
	}
	return Next{Action: ActWait, Task: &t}, nil
}

func (s *Store) chatWork(ctx context.Context, cfg *storage.Config, agent string, ses *Session) (Next, error) {
	convs, err := s.conversationsOf(ctx, cfg, agent)
	if err != nil {
		return Next{}, err
	}
	next, until, inConversation := conversationWork(cfg, agent, convs)
	if next != nil {
		return *next, nil
	}
	if next, err = s.delegationWork(agent, ses); err != nil {
		return Next{}, err
	}
	if next != nil {
		return *next, nil
	}
	msgs, more, err := s.Unread(ctx, agent, 1, true)
	if err != nil {
		return Next{}, err
	}
	if len(msgs) > 0 {
		return Next{Action: ActGetPendingMessages, From: msgs[0].SenderID, More: more, First: &msgs[0]}, nil
	}
	if ses == nil {
		if t := s.claimOffer(cfg, agent); t != nil && !inConversation {
			return Next{Action: ActClaimTask, Task: t}, nil
		}
		return Next{Action: ActWait, Until: until}, nil
	}
	unread, _, err := s.SessionNotifications(ctx, *ses, true, 0) // only those that concern this session (DESIGN section 6)
	if err != nil {
		return Next{}, err
	}
	if n := len(unread); n > 0 {
		return Next{Action: ActGetNotifications, Notifications: n}, nil
	}
	if inConversation {
		return Next{Action: ActWait, Until: until}, nil
	}
	if t := s.claimOffer(cfg, agent); t != nil {
		return Next{Action: ActClaimTask, Task: t}, nil
	}
	if idle, err := s.chatIdle(*ses, cfg); err != nil || idle {
		return Next{Action: ActLogout}, err
	}
	return Next{Action: ActWait, Until: until}, nil
}

// conversationWork is what agent's conversations ask of its chat session,
// first the news of an end, then a request to it (nil: nothing), with the
// earliest conversation deadline and whether one is open (an open
// conversation is not idleness: it has its own timeouts).
func conversationWork(cfg *storage.Config, agent string, convs []Conversation) (next *Next, until time.Time, open bool) {
	for i, c := range convs {
		if c.owesNews(agent) {
			return &Next{Action: ActConversationEnded, Conversation: &convs[i]}, until, open
		}
	}
	for i, c := range convs {
		if c.awaitsAcceptance(agent) {
			return &Next{Action: ActConversationRequest, Conversation: &convs[i]}, until, open
		}
		open = open || c.Open()
		if d := c.Deadline(cfg); !d.IsZero() && (until.IsZero() || d.Before(until)) {
			until = d
		}
	}
	return nil, until, open
}

// delegationWork is the open delegation of agent's that waits for its chat
// session ses (nil: none, or no session yet), or nil.
func (s *Store) delegationWork(agent string, ses *Session) (*Next, error) {
	dlgs, err := s.Delegations().List(DelegationFilter{Agent: agent, Open: true})
	if err != nil {
		return nil, err
	}
	current := ""
	if ses != nil {
		current = ses.ID
	}
	for i, d := range dlgs {
		if s.waitsForChat(d, current) {
			return &Next{Action: ActProcessDelegation, Delegation: &dlgs[i]}, nil
		}
	}
	return nil, nil
}

// chatIdle says whether a chat session has seen no message, in or out, for
// the chat idle timeout (measured from the last message of its log, or the
// session's start).
func (s *Store) chatIdle(ses Session, cfg *storage.Config) (bool, error) {
	last := ses.CreatedAt
	m, err := s.lastMessage(ses.Agent)
	if err != nil {
		return false, err
	}
	if m != nil {
		if t, err := time.Parse(time.RFC3339Nano, m.CreatedAt); err == nil && t.After(last) {
			last = t
		}
	}
	return time.Since(last) > cfg.Defaults.ChatIdleTimeout.Duration, nil
}

// NextAction is Work for a session, taking what it finds: a conversation
// end it reports is recorded as told (each party is told once), a
// conversation request it reports becomes active, and a delegation it
// reports becomes processing. If another process took it first, the rule
// is asked again.
func (s *Store) NextAction(ctx context.Context, cfg *storage.Config, ses Session) (Next, error) {
	for {
		next, err := s.Work(ctx, cfg, ses.Agent, ses.Purpose, &ses)
		if err != nil {
			return next, err
		}
		var c Conversation
		took := true
		switch next.Action {
		case ActConversationEnded:
			c, took, err = s.tellEnded(ctx, cfg, ses.Agent, next.Conversation.ID)
		case ActConversationRequest:
			c, took, err = s.accept(ctx, cfg, ses.Agent, next.Conversation.ID)
		case ActProcessDelegation:
			var d Delegation
			if d, took, err = s.takeDelegation(ctx, ses, next.Delegation.ID); err == nil && took {
				next.Delegation = &d
				return next, nil
			}
		default:
			return next, nil
		}
		if err != nil {
			return next, err
		}
		if took {
			next.Conversation = &c
			return next, nil
		}
	}
}

// WakeTargets are the files and directories whose change may change the
// answer of Work for ses: what a waiting get_next_action watches. The
// directories are created if missing, so that they can be watched.
func (s *Store) WakeTargets(ses Session) ([]string, error) {
	chat, err := s.files.ChatPath(ses.Agent)
	if err != nil {
		return nil, err
	}
	notes, _ := s.files.NotificationsPath(ses.Agent)
	sesPath, err := s.files.DocPath(storage.Sessions, ses.ID)
	if err != nil {
		return nil, err
	}
	targets := []string{chat, notes, sesPath, s.files.CollectionDir(storage.Delegations), s.files.CollectionDir(storage.Conversations)}
	dirs := []string{s.files.CollectionDir(storage.Sessions), s.files.CollectionDir(storage.Delegations), s.files.CollectionDir(storage.Conversations)}
	if err := s.files.EnsureAgentDir(ses.Agent); err != nil {
		return nil, err
	}
	if ses.Purpose == storage.PurposeTask && ses.TaskID != "" {
		task, err := s.files.DocPath(storage.Tasks, ses.TaskID)
		if err != nil {
			return nil, err
		}
		targets = append(targets, task)
		if s.hasSubtasks(ses.TaskID) {
			targets = append(targets, s.files.CollectionDir(storage.Tasks)) // a parent waits for its subtasks
		}
		dirs = append(dirs, s.files.CollectionDir(storage.Tasks))
	}
	for _, d := range dirs {
		if err := s.files.MkdirAll(d); err != nil {
			return nil, err
		}
	}
	return targets, nil
}
