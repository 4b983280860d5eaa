package hook

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"aipm/fsstore"
)

// Session is the aipm session of the client that runs the hook: the
// agent's live session of Purpose, or, when the agent has several (a task
// and a chat session in two clients), the one whose aipm serve process
// shares the nearest ancestor with the hook (the client that started
// both). ok is false when there is none, or no way to tell.
func (h *Hook) Session(now time.Time) (ses fsstore.Session, ok bool, err error) {
	live, err := h.Store.LiveSessionsFor(h.Agent, h.Purpose, now)
	if err != nil {
		return ses, false, err
	}
	switch len(live) {
	case 0:
		return ses, false, nil
	case 1:
		return live[0], true, nil
	}
	mine := Ancestors(h.Parent, maxDepth)
	best, bestAt, tie := -1, len(mine), false
	for i, s := range live {
		at := nearestCommon(mine, Ancestors(s.PID, maxDepth))
		switch {
		case at < bestAt:
			best, bestAt, tie = i, at, false
		case at == bestAt:
			tie = true
		}
	}
	if best < 0 || tie {
		return ses, false, nil
	}
	return live[best], true, nil
}

// maxDepth bounds how far up the process tree the hook looks.
const maxDepth = 8

// nearestCommon is the index in mine of the first process that is also in
// theirs; len(mine) if none. Process 1 never counts.
func nearestCommon(mine, theirs []int) int {
	for i, p := range mine {
		if p > 1 && slices.Contains(theirs, p) {
			return i
		}
	}
	return len(mine)
}

// Ancestors returns pid and its ancestors, nearest first, at most depth of
// them, read from /proc (none where there is no /proc).
func Ancestors(pid, depth int) []int {
	var out []int
	for pid > 1 && len(out) < depth {
		out = append(out, pid)
		pid = parentOf(pid)
	}
	return out
}

// parentOf reads pid's parent from /proc/<pid>/stat (0 if unknown).
func parentOf(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	s := string(data)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return 0
	}
	fields := strings.Fields(s[end+1:])
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// sessionStart tells a new model who its agent is, what it is for, and
// what waits: one line each. It needs no aipm session (the client starts
// aipm serve, and the model authenticates, after it) and records nothing.
func (h *Hook) sessionStart(ctx context.Context) (Result, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "aipm: you are agent %s of project %s.", h.Agent, h.Config.Project.Name)
	purpose := h.Purpose
	if purpose == "" {
		purpose = "chosen by authenticate from the work that waits"
	}
	fmt.Fprintf(&b, "\naipm: purpose of this session: %s.", purpose)
	msgs, _, err := h.Store.Unread(ctx, h.Agent, 0, true)
	if err != nil {
		return Result{}, err
	}
	notes, err := h.Store.UnreadNotificationIDs(ctx, h.Agent)
	if err != nil {
		return Result{}, err
	}
	fmt.Fprintf(&b, "\naipm: unread: %s, %s.", count(len(msgs), "message"), count(len(notes), "notification"))
	if len(msgs) > 0 {
		fmt.Fprintf(&b, " Messages: %s.", bySender(msgs))
	}
	work, err := h.pendingWork(ctx)
	if err != nil {
		return Result{}, err
	}
	fmt.Fprintf(&b, "\naipm: pending work: %s.", work)
	b.WriteString("\naipm: aipm's authenticate opens the session (the server holds the credential); get_next_action then says what to do.")
	return addContext(h.dialect(), SessionStart, b.String()), nil
}

// pendingWork names the work the rule of DESIGN section 8 finds for the
// agent, per purpose (Store.Work without a session: nothing is taken);
// what counts as work is the rule's own (Next.IsWorkFor).
func (h *Hook) pendingWork(ctx context.Context) (string, error) {
	var parts []string
	for _, purpose := range []string{fsstore.PurposeTask, fsstore.PurposeChat} {
		if h.Purpose != "" && purpose != h.Purpose {
			continue
		}
		next, err := h.Store.Work(ctx, h.Config, h.Agent, purpose, nil)
		if err != nil {
			return "", err
		}
		switch {
		case !next.IsWorkFor(purpose):
		case purpose == fsstore.PurposeTask && next.Task != nil:
			parts = append(parts, fmt.Sprintf("task %s %q in progress", next.Task.ID, fsstore.Clip(next.Task.Title, 120)))
		case purpose == fsstore.PurposeChat:
			parts = append(parts, "chat: "+strings.ReplaceAll(next.Action, "_", " "))
		}
	}
	if len(parts) == 0 {
		return "none", nil
	}
	return strings.Join(parts, "; "), nil
}
