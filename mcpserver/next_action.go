package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// NextActionIn is get_next_action's arguments.
type NextActionIn struct {
	Session
	WaitSeconds int `json:"wait_seconds,omitempty" jsonschema:"at most 50"`
	Acknowledgement
}

// NextActionOut is get_next_action's result: the action, what to do, and the data it needs.
type NextActionOut struct {
	Action      string    `json:"action" jsonschema:"exit, logout, work, claim_task, conversation_ended, conversation_request, process_delegation, get_pending_messages, get_notifications, wait_for_messages, wait_for_task or wait_for_delegation"`
	Instruction string    `json:"instruction" jsonschema:"what to do now, naming the exact next tool call"`
	Task        *TaskView `json:"task,omitempty"`
	Tools       []string  `json:"tools,omitempty" jsonschema:"tools that help with this action"`
	// Conversation fields (seed 001), for conversation_request and conversation_ended.
	ConversationID string `json:"conversation_id,omitempty"`
	FromAgentID    string `json:"from_agent_id,omitempty" jsonschema:"who started the conversation"`
	FromAgentName  string `json:"from_agent_name,omitempty"`
	Purpose        string `json:"purpose,omitempty" jsonschema:"what the conversation is for"`
	MaxTurns       int    `json:"max_turns,omitempty"`
	State          string `json:"state,omitempty" jsonschema:"the conversation's state"`
	EndedBy        string `json:"ended_by,omitempty" jsonschema:"who ended the conversation (system for a timeout)"`
	Reason         string `json:"reason,omitempty" jsonschema:"why the conversation ended: initiator_ended, participant_ended, max_turns, timeout, session_expired or expired"`
	// PreviousConversationID, on a conversation_request: the last
	// conversation among the same parties, which get_conversation_messages
	// reads (seed 001).
	PreviousConversationID string `json:"previous_conversation_id,omitempty" jsonschema:"your last conversation with the same agents"`
	// Parties, for a group conversation: everyone in turn order.
	Parties  []string `json:"parties,omitempty"`
	NextTurn string   `json:"next_turn,omitempty"`
	// Delegation (seed 002): the one to carry out (process_delegation).
	Delegation *DelegationView `json:"delegation,omitempty" jsonschema:"the delegation to carry out"`
	// In a task session: the delegations of its task, and the
	// conversations carrying out the open ones (progress).
	Delegations   []DelegationView   `json:"delegations,omitempty" jsonschema:"the delegations of your task"`
	Conversations []ConversationView `json:"conversations,omitempty" jsonschema:"conversations carrying out your open delegations: state and turns"`
}

func getNextActionTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "get_next_action",
			Description: "What to do next: call after each step; waits while idle.",
			Annotations: mutating,
		},
		toldOfMessages: true,
		readsUnread:    true,
		takesAck:       true,
		level:          Authenticated,
		add:            addGetNextAction,
	}
}

func addGetNextAction(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in NextActionIn) (*mcp.CallToolResult, NextActionOut, error) {
		out, err := s.nextAction(ctx, sessionFrom(ctx), in.WaitSeconds)
		return nil, out, err
	})
}

// nextAction asks the store's one rule (fsstore.Store.NextAction) what the
// session should do; when the answer is to wait, it waits, woken by
// fsnotify the moment any file that concerns the session changes
// (fsstore.Store.WakeTargets) or a conversation deadline passes, and asks
// again, up to waitSeconds. The same loop serves task and chat sessions. It
// never debounces, and it ends at once when the client cancels the call,
// or when an interrupt for the session arrives: then it takes nothing and
// the gate answers with the interrupt (endWait).
func (s *Server) nextAction(ctx context.Context, ses fsstore.Session, waitSeconds int) (NextActionOut, error) {
	cfg, err := s.config()
	if err != nil {
		return NextActionOut{}, err
	}
	if waitSeconds < 0 || waitSeconds > fsstore.MaxWait {
		return NextActionOut{}, toolErr("invalid_wait", fmt.Sprintf("wait_seconds %d is out of range: use 1 to %d (clients abandon calls after 60 s)", waitSeconds, fsstore.MaxWait))
	}
	if waitSeconds == 0 {
		waitSeconds = cfg.Defaults.WaitSeconds
	}
	targets, err := s.store.WakeTargets(ses)
	if err != nil {
		return NextActionOut{}, fromStore(err, "agent_not_found")
	}
	// Subscribe before the first look, so nothing that changes between the
	// look and the wait is missed.
	sub, err := s.wake.Subscribe(targets...)
	if err != nil {
		return NextActionOut{}, toolErr("wait_unavailable", err.Error())
	}
	defer sub.Close()
	w := waiting{deadline: time.Now().Add(time.Duration(waitSeconds) * time.Second)}
	for {
		next, err := s.look(ctx, cfg, ses)
		if err != nil {
			return NextActionOut{}, err
		}
		pause, answer := w.pause(ses, next)
		if answer {
			return s.explain(cfg, ses, next), nil
		}
		s.log.Debug("waiting", "agent", ses.Agent, "session", ses.ID, "for", pause.Round(time.Millisecond))
		if _, err := sub.Wait(ctx, pause); err != nil {
			s.log.Debug("wait ended", "agent", ses.Agent, "session", ses.ID, "why", err)
			return NextActionOut{}, err // the client cancelled the call, or the server is stopping
		}
		w.woke = true
	}
}

// look asks the rule once. An unread interrupt ends the wait instead,
// whether it was there before the look (nothing is taken) or is what a
// get_notifications answer found.
func (s *Server) look(ctx context.Context, cfg *fsstore.Config, ses fsstore.Session) (fsstore.Next, error) {
	if err := s.endOnInterrupt(ctx, ses); err != nil {
		return fsstore.Next{}, err
	}
	next, err := s.store.NextAction(ctx, cfg, ses)
	if err != nil {
		return next, fromStore(err, "conversation_not_found")
	}
	if next.Action == fsstore.ActGetNotifications {
		// What arrived may be an interrupt that landed after the first
		// check: answer with it (nothing was taken).
		if err := s.endOnInterrupt(ctx, ses); err != nil {
			return next, err
		}
	}
	return next, nil
}

// waiting is the clock of one get_next_action's wait.
type waiting struct {
	deadline   time.Time // of the whole call (wait_seconds)
	graceUntil time.Time // of the wait for a stopped task's interrupt
	woke       bool      // the call has waited at least once
}

// pause says how long to wait before looking again, or that next is the
// answer. A wait ends at the call's deadline, and is cut short by a
// conversation deadline (next.Until). An exit because the task was
// stopped, seen after a wake, waits a moment for the interrupt: whoever
// stopped the task writes the task file, then the interrupt, and the wait
// should be answered with the interrupt.
func (w *waiting) pause(ses fsstore.Session, next fsstore.Next) (time.Duration, bool) {
	if next.Action != fsstore.ActWait {
		if !w.woke || !taskStopped(ses, next) {
			return 0, true
		}
		if w.graceUntil.IsZero() {
			w.graceUntil = time.Now().Add(interruptGrace)
		}
		grace := time.Until(w.graceUntil)
		return grace, grace <= 0
	}
	remaining := time.Until(w.deadline)
	if remaining <= 0 {
		return 0, true
	}
	if !next.Until.IsZero() {
		remaining = max(0, min(remaining, time.Until(next.Until)))
	}
	return remaining, false
}

// interruptGrace is how long a wait that saw its task stopped waits for
// the interrupt its writer appends next (the watcher's, for a hand edit,
// comes within tens of milliseconds).
const interruptGrace = 500 * time.Millisecond

// taskStopped says the answer for a task session is to exit because its
// task was set to blocked or cancelled: an interrupt may be on its way.
func taskStopped(ses fsstore.Session, next fsstore.Next) bool {
	return ses.Purpose == fsstore.PurposeTask && next.Action == fsstore.ActExit && next.Task != nil &&
		fsstore.StopsWork(next.Task.Status)
}

// endOnInterrupt ends the call's wait if the session has an unread
// interrupt: the gate then answers with it (endWait).
func (s *Server) endOnInterrupt(ctx context.Context, ses fsstore.Session) error {
	unread, err := s.store.Interrupt(ctx, ses)
	if err != nil {
		return fromStore(err, "notification_not_found")
	}
	if intr := unread.Interrupt; intr != nil {
		endWait(ctx, intr)
		return errWaitInterrupted
	}
	return nil
}

// errWaitInterrupted is what get_next_action returns when an interrupt
// ended its wait; the gate answers with the interrupt instead.
var errWaitInterrupted = toolErr("interrupted", "an interrupt arrived for this session: call get_notifications")

// explain turns the rule's answer into the response: the action, an
// instruction naming the exact next call, and the data it needs.
func (s *Server) explain(cfg *fsstore.Config, ses fsstore.Session, n fsstore.Next) NextActionOut {
	out := NextActionOut{Action: n.Action, Task: taskRef(n.Task)}
	switch n.Action {
	case fsstore.ActExit:
		out.Instruction = fmt.Sprintf("This session is over (%s). Call logout, then exit.", n.Reason)
		if n.Task != nil {
			out.Instruction = fmt.Sprintf("Task %s is %s (assignee %q): there is nothing for you to do on it. Call logout, then exit.", n.Task.ID, n.Task.Status, n.Task.Assignee)
		}
	case fsstore.ActWork:
		explainWork(&out, n)
	case fsstore.ActClaimTask:
		out.Instruction = fmt.Sprintf("Task %s (%q, %s) is ready and nobody has it: call claim_task(task_id=%q). It then starts in its own task session, which aipm starts for you; call get_next_action here.", n.Task.ID, n.Task.Title, n.Task.Priority, n.Task.ID)
		out.Tools = []string{"claim_task", "get_task"}
	case fsstore.ActWait:
		s.explainWait(&out, ses, n)
	case fsstore.ActConversationEnded:
		c := n.Conversation
		out.ConversationID, out.State, out.EndedBy, out.Reason = c.ID, c.State, c.EndedBy, c.EndReason
		out.Instruction = fmt.Sprintf("Conversation %s with %s has ended (%s, by %s, after %d turns). Do not send it more turns. %sCall get_next_action.", c.ID, c.Other(ses.Agent), c.EndReason, c.EndedBy, c.Turns, s.delegationReminder(ses, c.ID))
	case fsstore.ActConversationRequest:
		explainConversationRequest(&out, cfg, *n.Conversation)
	case fsstore.ActProcessDelegation:
		explainProcessDelegation(&out, *n.Delegation)
	case fsstore.ActGetPendingMessages:
		what := "a message"
		if n.More {
			what = "messages"
		}
		out.Instruction = fmt.Sprintf("You have %s from %s. Call get_pending_messages, answer with respond_chat or send_message (send_conversation_message within a conversation), then call get_next_action.", what, n.From)
		if m := n.First; m != nil && m.Kind != fsstore.KindSystem {
			for _, u := range fsstore.ParseMarkers(m.Content) { // named here, explained by get_pending_messages
				out.Instruction += " " + markerCall(m.SenderID, u)
			}
		}
	case fsstore.ActGetNotifications:
		out.Instruction = "A notification arrived. Call get_notifications and act on it, then call get_next_action."
	case fsstore.ActLogout:
		out.Instruction = fmt.Sprintf("Nothing has happened in this chat session for %s. Call logout, then exit; aipm starts you again when a message arrives.", cfg.Defaults.ChatIdleTimeout.Duration)
	}
	return out
}

// explainWork: a task session works on its task, told how its delegations
// went.
func explainWork(out *NextActionOut, n fsstore.Next) {
	out.Instruction = fmt.Sprintf("Work on task %s: %s. Keep calling tools as you go; every response carries a notification line. "+
		"You cannot message anyone from a task session: to talk to another agent, call delegate_to_chat_session(target_agent_id, purpose) and then get_next_action, which waits for the result. "+
		"When finished, call report_completed(result=\"success\", summary=...); if you cannot finish, report_completed(result=\"failed\" or \"blocked\", summary=why).",
		n.Task.ID, n.Task.Title)
	if len(n.Delegations) > 0 {
		out.Delegations = delegationViews(n.Delegations)
		d := n.Delegations[len(n.Delegations)-1]
		out.Instruction = fmt.Sprintf("Your delegation %s is %s: %s. Read the details with get_task and get_conversation_messages. ", d.ID, d.Status, d.Result) + out.Instruction
	}
	for _, r := range n.Reports {
		// A completion report (@@完了報告) is the task session's to decide on.
		out.Instruction = "First, decide on a completion report: " + r.Message + ". " + fsstore.CompletionDecision + " (get_notifications marks it read.) " + out.Instruction
	}
	out.Tools = []string{"get_task", "update_task_status", "delegate_to_chat_session", "get_conversation_messages", "lease", "report_completed", "get_notifications"}
}

// explainWait names what the session waits for: its subtasks (the parent
// rule, DESIGN section 20), its delegation, its task moving back to
// in_progress, or messages. A wait is answered again and
// again, so it carries no task record (the instruction names the task;
// get_task shows it).
func (s *Server) explainWait(out *NextActionOut, ses fsstore.Session, n fsstore.Next) {
	out.Task = nil
	switch {
	case ses.Purpose == fsstore.PurposeTask && len(n.Waits) > 0:
		out.Action = "wait_for_task"
		out.Instruction = fmt.Sprintf("Task %s waits for its subtasks: %s. aipm starts your task session again when they are done, so you may call logout, then exit; or call get_next_action again now to wait here.", n.Task.ID, fsstore.WaitsText(n.Waits))
	case ses.Purpose == fsstore.PurposeTask && len(n.Delegations) > 0:
		out.Action = "wait_for_delegation"
		out.Delegations, out.Conversations = delegationViews(n.Delegations), conversationViews(n.Progress)
		out.Instruction = fmt.Sprintf("Your chat session is still carrying out a delegation of task %s (%s). Call get_next_action again now to keep waiting; it returns work when the delegation is done.", n.Task.ID, delegationProgress(n))
		out.Tools = []string{"get_task", "get_conversation_messages"}
	case ses.Purpose == fsstore.PurposeTask:
		out.Action = "wait_for_task"
		out.Instruction = fmt.Sprintf("Task %s is %s: wait for it to be in progress again. Call get_next_action again now.", n.Task.ID, n.Task.Status)
	default:
		out.Action = "wait_for_messages"
		out.Instruction = "Nothing new yet. " + s.delegationReminder(ses, "") + "Call get_next_action again now."
	}
}

// explainConversationRequest: another agent asks the chat session for a
// conversation.
func explainConversationRequest(out *NextActionOut, cfg *fsstore.Config, c fsstore.Conversation) {
	out.ConversationID, out.FromAgentID, out.Purpose, out.MaxTurns, out.State = c.ID, c.Initiator, c.Purpose, c.MaxTurns, c.State
	out.FromAgentName = c.Initiator
	if a, ok := cfg.Agent(c.Initiator); ok && a.Name != "" {
		out.FromAgentName = a.Name
	}
	purpose := ""
	if c.Purpose != "" {
		purpose = fmt.Sprintf(" about %q", c.Purpose)
	}
	out.Instruction = fmt.Sprintf("%s started conversation %s with you%s (at most %d turns). Call get_pending_messages to read its messages, "+
		"answer each with send_conversation_message(content); when it is done, call end_conversation. Then call get_next_action.", c.Initiator, c.ID, purpose, c.MaxTurns)
	if c.IsGroup() {
		out.Parties, out.NextTurn = c.Parties(), c.NextSpeaker()
		out.Instruction = fmt.Sprintf("%s started group conversation %s with %s%s (at most %d turns in all). Turns go in this order, round-robin: %s; it is %s's turn now. "+
			"Read the turns with get_pending_messages; when it is your turn, send it with send_conversation_message(content) (it reaches every party); anyone may call end_conversation, which ends it for all. Then call get_next_action.",
			c.Initiator, c.ID, strings.Join(c.Participants, ", "), purpose, c.MaxTurns, strings.Join(c.Parties(), ", "), c.NextSpeaker())
	}
	out.Tools = []string{"get_pending_messages", "send_conversation_message", "end_conversation"}
	if p := c.Previous; p != nil {
		about := ""
		if p.Purpose != "" {
			about = fmt.Sprintf(" (about %q)", p.Purpose)
		}
		out.PreviousConversationID = p.ID
		out.Instruction += fmt.Sprintf(" You talked before in %s%s: get_conversation_messages(%s) reads it, if it helps.", p.ID, about, p.ID)
		out.Tools = append(out.Tools, "get_conversation_messages")
	}
}

// explainProcessDelegation: the chat session carries out a delegation of
// its own task session.
func explainProcessDelegation(out *NextActionOut, d fsstore.Delegation) {
	out.Delegation = ref(delegationView(d))
	out.Instruction = fmt.Sprintf("Your task session (task %s) asks you to talk to %s: %q. "+
		"Decide how: for one message, send_message(target_agent_id=%q, related_task_id=%q); for an exchange of several turns, start_conversation(target_agent_id=%q, delegation_id=%q), "+
		"answer each turn with send_conversation_message as get_next_action brings them, and call end_conversation when it is done. "+
		"Then call report_delegation_completed(delegation_id=%q, result=what came of it, status=\"completed\" or \"failed\"), and get_next_action.",
		d.TaskID, d.Target, d.Purpose, d.Target, d.TaskID, d.Target, d.ID, d.ID)
	if d.Context != "" {
		out.Instruction += " Context: " + d.Context
	}
	out.Tools = []string{"send_message", "start_conversation", "send_conversation_message", "end_conversation", "report_delegation_completed"}
}

// delegationProgress says where the open delegations of a task stand.
func delegationProgress(n fsstore.Next) string {
	var parts []string
	for _, d := range n.Delegations {
		if !d.Open() {
			continue
		}
		p := fmt.Sprintf("delegation %s to %s is %s", d.ID, d.Target, d.Status)
		for _, c := range n.Progress {
			if slices.Contains(d.Conversations, c.ID) {
				p += fmt.Sprintf("; conversation %s is %s after %d of %d turns", c.ID, c.State, c.Turns, c.MaxTurns)
			}
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// delegationReminder reminds a chat session of the delegations it is
// carrying out (those listing conversation cnv, when given): the task
// session waits for report_delegation_completed.
func (s *Server) delegationReminder(ses fsstore.Session, cnv string) string {
	ds, err := s.store.Delegations().List(fsstore.DelegationFilter{Agent: ses.Agent, Status: fsstore.DlgProcessing})
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, d := range ds {
		if d.SessionID == ses.ID && (cnv == "" || slices.Contains(d.Conversations, cnv)) {
			fmt.Fprintf(&b, "If delegation %s (%q) is done, call report_delegation_completed(delegation_id=%q, result=what came of it); your task session waits for it. ", d.ID, d.Purpose, d.ID)
		}
	}
	return b.String()
}
