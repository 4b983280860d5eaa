// Package hook is `aipm hook`: what Claude Code and Codex run at turn
// boundaries (DESIGN section 15), so that an agent hears of an interrupt
// or of new work while it is not calling aipm's tools. Each event reads
// what waits for the agent's aipm session that its model was not told of
// (fsstore.Store.Notices), answers in the client's documented JSON, and
// records what it told (fsstore.Store.Surface): a notice is told once per
// session, by a hook or by a tool response, and nothing new means no
// output at all.
package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"aipm/fsstore"
	"aipm/internal/clients"
)

// Events aipm answers (each client's own names map onto them:
// clients.Dialect.Events); any other prints nothing.
const (
	SessionStart     = clients.SessionStart
	UserPromptSubmit = clients.UserPromptSubmit
	PreToolUse       = clients.PreToolUse
	PostToolUse      = clients.PostToolUse
	Stop             = clients.Stop
)

// Input is the part of the client's stdin JSON aipm reads (both clients
// send these fields; unknown ones are ignored).
type Input struct {
	SessionID      string `json:"session_id"`
	Event          string `json:"hook_event_name"`
	ToolName       string `json:"tool_name"`
	StopHookActive bool   `json:"stop_hook_active"`
	Cwd            string `json:"cwd"`
	// ToolUseID is the client's id of the tool call (PreToolUse): Claude
	// Code's permission_denials and Codex's records name a call by it.
	ToolUseID string `json:"tool_use_id"`
	// ToolInput is the tool's arguments (PreToolUse): a file-writing
	// tool's are looked at for leases.
	ToolInput json.RawMessage `json:"tool_input"`
}

// ReadInput reads the client's event from stdin: one JSON value, and no
// further (a client may keep stdin open after it), of at most MaxInput
// bytes. When it cannot, in is what the start of the input named (both
// clients write the event and the tool's name before the tool's input),
// for unreadable's answer.
func ReadInput(r io.Reader) (in Input, err error) {
	lr := &inputLimit{r: r, left: MaxInput}
	dec := json.NewDecoder(lr)
	if err = dec.Decode(&in); err == nil {
		return in, nil
	}
	head, _ := io.ReadAll(io.LimitReader(dec.Buffered(), maxHead))
	in = headInput(head)
	if errors.Is(err, errInputTooLarge) {
		return in, fmt.Errorf("hook input is over %d MiB", MaxInput>>20)
	}
	return in, fmt.Errorf("hook input is not the client's JSON: %w", err)
}

// maxHead is how much of an unreadable input headInput looks at.
const maxHead = 64 << 10

var errInputTooLarge = errors.New("hook input too large")

// inputLimit is r up to left bytes, and then errInputTooLarge.
type inputLimit struct {
	r    io.Reader
	left int64
}

func (l *inputLimit) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errInputTooLarge
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// headInput is what the fields of a JSON object's start say, up to the
// first value that is cut short or not JSON.
func headInput(head []byte) Input {
	var in Input
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return in
	}
	for dec.More() {
		t, err := dec.Token()
		key, isKey := t.(string)
		if err != nil || !isKey {
			break
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			break
		}
		switch key {
		case "hook_event_name":
			json.Unmarshal(v, &in.Event)
		case "tool_name":
			json.Unmarshal(v, &in.ToolName)
		case "session_id":
			json.Unmarshal(v, &in.SessionID)
		case "cwd":
			json.Unmarshal(v, &in.Cwd)
		case "tool_use_id":
			json.Unmarshal(v, &in.ToolUseID)
		}
	}
	return in
}

// Hook answers one client event for one agent.
type Hook struct {
	Store  *fsstore.Store
	Config *fsstore.Config
	Agent  string
	// Purpose is the purpose the agent's process was started for
	// (AIPM_PURPOSE), or "".
	Purpose string
	// Parent is the hook process's parent: its ancestors are how the hook
	// finds the aipm session of its own client when the agent has two
	// (see Session).
	Parent int
	// Launch is the client run the hook's client is, as aipm launch named
	// it (fsstore.EnvLaunchID); "" for a client aipm did not start. The
	// tool calls the hook denies are recorded under it (Main).
	Launch string
	// Dialect is the hook's client's (clients.Client.Hooks): its event
	// names, its own-tool names, its file-writing tools, how it reads an
	// answer. The zero Dialect is the default client's.
	Dialect clients.Dialect
}

// dialect is h's client's dialect.
func (h *Hook) dialect() clients.Dialect {
	if h.Dialect.Deny == nil {
		c, _ := clients.Get(clients.DefaultHookClient)
		return c.Hooks
	}
	return h.Dialect
}

// Result is what the hook process prints and its exit code.
type Result struct {
	Stdout []byte
	Stderr string
	Exit   int
	// Denied is the tool call refused (a PreToolUse denied), nil for
	// any other answer: Main records it for aipm launch.
	Denied *fsstore.Denial
}

// Run answers in for the client. A missing session, or nothing new,
// prints nothing.
func (h *Hook) Run(ctx context.Context, in Input) (Result, error) {
	d := h.dialect()
	in.Event = d.Event(in.Event)
	if in.Event == SessionStart {
		return h.sessionStart(ctx)
	}
	switch in.Event {
	case PreToolUse, PostToolUse, UserPromptSubmit, Stop:
	default:
		return Result{}, nil
	}
	if in.Event == PreToolUse {
		// A lease holds whether or not the agent has an aipm session.
		if reason, den := h.leaseRefusal(in); reason != "" {
			return denied(d, reason, den), nil
		}
	}
	ses, ok, err := h.Session(time.Now())
	if err != nil || !ok {
		return Result{}, err
	}
	own := d.Own(in.ToolName)
	switch in.Event {
	case PreToolUse:
		return h.preToolUse(ctx, ses, own)
	case PostToolUse:
		if own { // the tool's response carries aipm's notices
			return Result{}, h.toolUsed(ctx, ses)
		}
		return h.tell(ctx, ses, PostToolUse)
	case UserPromptSubmit:
		return h.tell(ctx, ses, UserPromptSubmit)
	}
	return h.stop(ctx, ses, in.StopHookActive)
}

// preToolUse refuses every tool but aipm's own while an interrupt waits
// for the session: no file is edited and no command runs after a human
// stopped the task.
func (h *Hook) preToolUse(ctx context.Context, ses fsstore.Session, own bool) (Result, error) {
	if own {
		return Result{}, nil
	}
	reason, why, err := h.refusal(ctx, ses)
	switch {
	case err != nil:
		return Result{}, err
	case reason == "":
		return Result{}, h.toolUsed(ctx, ses)
	}
	return denied(h.dialect(), reason, fsstore.Denial{Why: why}), nil
}

// refusal is why a tool must not run now ("" when nothing stops it): an
// interrupt waits for ses, or its notifications cannot be read; why is
// which (fsstore.DeniedInterrupt, fsstore.DeniedUnreadable). The refusal
// never depends on recording it: the reason carries the interrupt, and
// whatever else the model was not told of when that could be recorded as
// told.
func (h *Hook) refusal(ctx context.Context, ses fsstore.Session) (reason, why string, err error) {
	unread, err := h.Store.Interrupt(ctx, ses)
	if errors.Is(err, fsstore.ErrNotificationsUnreadable) {
		// Fail closed, as aipm's own tools do: one of them may be an interrupt.
		return fmt.Sprintf("aipm: %s's notifications cannot be read, and one of them may be an interrupt: %v. A human runs aipm doctor --repair; until then only aipm's own tools run.", ses.Agent, err), fsstore.DeniedUnreadable, nil
	}
	if err != nil {
		return "", "", err
	}
	if unread.Interrupt == nil {
		return "", "", nil
	}
	earlier := h.showInterrupt(ctx, ses, unread.Interrupt)
	reason = interruptText(ses, unread.Interrupt) + earlier
	for range tellAttempts {
		n, err := h.Store.Notices(ctx, h.Config, ses)
		if err != nil || n.Interrupt == nil {
			break
		}
		told, err := h.Store.Surface(ctx, ses, n, "hook "+PreToolUse, func(s *fsstore.Surfaced) { s.StopBlocks = 0 })
		if err != nil {
			break
		}
		if told {
			reason = interruptText(ses, n.Interrupt) + earlier + untoldText(without(n, n.Interrupt))
			break
		}
		ses = h.reread(ses)
	}
	return reason, fsstore.DeniedInterrupt, nil
}

// showInterrupt hands the session the interrupt its model is about to be
// shown whole, with the unread notifications before it, and returns their
// text (fsstore.Store.ShowInterrupt): they are read on the session's next
// aipm call, and until then the interrupt still refuses. Nothing is handed
// when they would not fit whole; a failure to hand refuses all the same.
func (h *Hook) showInterrupt(ctx context.Context, ses fsstore.Session, intr *fsstore.Notification) string {
	text := ""
	h.Store.ShowInterrupt(ctx, ses, *intr, func(ns []fsstore.Notification) bool {
		t := earlierText(ns)
		if len(interruptText(ses, intr))+len(t) > MaxContext/2 {
			return false // the rest of the notice needs room too
		}
		text = t
		return true
	})
	return text
}

// tell adds what the model was not told of to its context (PostToolUse,
// UserPromptSubmit), once.
func (h *Hook) tell(ctx context.Context, ses fsstore.Session, event string) (Result, error) {
	for range tellAttempts {
		n, err := h.Store.Notices(ctx, h.Config, ses)
		if err != nil {
			return Result{}, err
		}
		resetStops := event == PostToolUse && ses.Surfaced.StopBlocks > 0
		if n.Empty() && !resetStops {
			return Result{}, nil
		}
		told, err := h.Store.Surface(ctx, ses, n, "hook "+event, func(s *fsstore.Surfaced) {
			if event == PostToolUse {
				s.StopBlocks = 0
			}
		})
		if err != nil {
			return Result{}, err
		}
		if told {
			if n.Empty() {
				return Result{}, nil
			}
			return addContext(h.dialect(), event, strings.TrimSpace(untoldText(n))), nil
		}
		ses = h.reread(ses)
	}
	return Result{}, nil
}

// toolUsed notes that the model used a tool: the Stop hook's count of
// blocks in a row starts again. Nothing is written when it is zero.
func (h *Hook) toolUsed(ctx context.Context, ses fsstore.Session) error {
	if ses.Surfaced.StopBlocks == 0 {
		return nil
	}
	n := fsstore.Notices{From: ses.Surfaced, To: ses.Surfaced}
	_, err := h.Store.Surface(ctx, ses, n, "", func(s *fsstore.Surfaced) { s.StopBlocks = 0 })
	return err
}

// stop keeps the model working, once per notice, when an interrupt or
// something it was not told of waits as its turn ends; never when the
// client says a Stop hook already kept it going (stop_hook_active), and
// never more than fsstore.MaxStopBlocks times before it uses a tool.
func (h *Hook) stop(ctx context.Context, ses fsstore.Session, active bool) (Result, error) {
	if active {
		return Result{}, nil
	}
	for range tellAttempts {
		if ses.Surfaced.StopBlocks >= fsstore.MaxStopBlocks {
			return Result{}, nil
		}
		reason, told, err := h.tellTurnEnd(ctx, ses, Stop, func(s *fsstore.Surfaced) { s.StopBlocks++ })
		switch {
		case err != nil:
			return Result{}, err
		case told:
			return block(h.dialect(), reason), nil
		case reason == "":
			return Result{}, nil
		}
		ses = h.reread(ses)
	}
	return Result{}, nil
}

// tellTurnEnd is what the Stop hook and the idle wake tell as a turn ends:
// an interrupt not yet told at a turn's end (once each), and what else
// the model was not told of. told is false when there is nothing (reason
// "") or another process told it first (reason set: read again); edit
// changes the record with it.
func (h *Hook) tellTurnEnd(ctx context.Context, ses fsstore.Session, via string, edit func(*fsstore.Surfaced)) (reason string, told bool, err error) {
	n, err := h.Store.Notices(ctx, h.Config, ses)
	if err != nil {
		return "", false, err
	}
	intr := n.Interrupt
	if intr != nil && intr.ID == ses.Surfaced.StopInterrupt {
		intr = nil // told at a turn's end already
	}
	if intr == nil && n.Empty() {
		return "", false, nil
	}
	earlier := ""
	if intr != nil {
		if earlier = h.showInterrupt(ctx, ses, intr); earlier != "" {
			// handed with it: no longer among what is new
			if n, err = h.Store.Notices(ctx, h.Config, ses); err != nil {
				return "", false, err
			}
		}
	}
	reason = strings.TrimSpace(untoldText(n))
	if intr != nil {
		reason = interruptText(ses, intr) + earlier + untoldText(without(n, intr))
	}
	told, err = h.Store.Surface(ctx, ses, n, "hook "+via, func(s *fsstore.Surfaced) {
		if intr != nil {
			s.StopInterrupt = intr.ID
		}
		if edit != nil {
			edit(s)
		}
	})
	return reason, told, err
}

// tellAttempts bounds how often a hook reads again because another
// process told the session something between its read and its record.
const tellAttempts = 3

// reread is ses as its document holds it now (after another process
// recorded what it told).
func (h *Hook) reread(ses fsstore.Session) fsstore.Session {
	if cur, err := h.Store.Session(ses.ID); err == nil {
		return cur
	}
	return ses
}

// without is n less the notification intr (said on its own).
func without(n fsstore.Notices, intr *fsstore.Notification) fsstore.Notices {
	var rest []fsstore.Notification
	for _, x := range n.Notifications {
		if x.ID != intr.ID {
			rest = append(rest, x)
		}
	}
	n.Notifications = rest
	return n
}
