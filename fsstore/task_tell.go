package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// taskTell is a chat message a task's status change owes: the one that
// tells the task's requester it ended (endTells). It is written into the
// task with the change, under the tasks lock, and taken out once sent
// (UpdateTask, sendTells). A process killed in between leaves it there,
// and the task's next change, or aipm doctor --repair, sends it (untold
// tells, finishTells): the requester is told once, since its id is fixed
// with the change and a copy already in a log is not written again.
type taskTell struct {
	MessageID string    `json:"messageId"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	Content   string    `json:"content"`
	At        time.Time `json:"at"`
}

// endTells is the one rule of who is told that a task ended (DESIGN
// section 11): a change by `by` that moves it to done, blocked or
// cancelled tells its requester, unless the requester made it; a task
// without a requester to tell (none, one no longer of the project, or the
// assignee itself: a task it asked for) that its assignee ended tells the
// assignee's human (Config.TellWhom). The message is from `by` when it is
// an agent of the project, else from the system, and is marked a system
// message: aipm wrote it, and a marker in its text is never acted on. It
// names the task, its title, the status, the result reported and the
// summary or reason.
func endTells(cfg *storage.Config, before, after Task, by string, now time.Time) []taskTell {
	if after.Status == before.Status || (after.Status != StatusDone && !StopsWork(after.Status)) {
		return nil
	}
	var to []string
	if _, ok := cfg.Agent(after.Requester); ok && after.Requester != by {
		to = []string{after.Requester}
	} else if after.Assignee != "" && by == after.Assignee {
		to = cfg.TellWhom(after.Assignee)
	}
	to = slices.DeleteFunc(to, func(a string) bool { return a == by })
	if len(to) == 0 {
		return nil
	}
	from := storage.SystemSender
	if _, ok := cfg.Agent(by); ok {
		from = by
	}
	content := endText(before, after, by)
	tells := make([]taskTell, len(to))
	for i, r := range to {
		tells[i] = taskTell{MessageID: storage.NewID(storage.PrefixMessage), From: from, To: r, Content: content, At: now}
	}
	return tells
}

// maxToldSummary is how much of a summary or reason the message that a
// task ended carries (a chat message holds at most MaxContent).
const maxToldSummary = 3000

// endText is the message that a task ended: its id, title and status,
// who set it (with the result, if a report did), and the summary or
// reason, as the task now says: `Task tsk_… "Write the parser" is done
// (coder reported success): did it in 3 steps`.
func endText(before, after Task, by string) string {
	who := by
	if who == "" {
		who = HandEdit
	}
	how := "set by " + who
	if after.Result != "" && (after.Result != before.Result || after.Summary != before.Summary) {
		how = who + " reported " + after.Result
	}
	text := fmt.Sprintf("Task %s %q is %s (%s)", after.ID, storage.Clip(after.Title, storage.MaxTitle), after.Status, how)
	why := after.BlockedReason
	if after.Summary != "" && after.Summary != before.Summary {
		why = after.Summary
	}
	if why = strings.TrimSpace(why); why != "" {
		if len(why) > maxToldSummary {
			why = storage.Clip(why, maxToldSummary) + fmt.Sprintf(" (all of it: aipm task show %s)", after.ID)
		}
		text += ": " + why
	}
	return text
}

// sendTells sends the tells of task t that are due: those of this change
// (fresh, by their ids) at once, as any message is sent; those left by an
// earlier change (a process killed between its two writes) once they are
// older than a send in flight, each copy only if its log does not hold it
// yet. Each sent tell is then taken out of the task; what is left is
// returned.
func (s *Store) sendTells(ctx context.Context, t Task, fresh []taskTell, now time.Time) ([]taskTell, error) {
	var sent []string
	var errs []error
	for _, tl := range t.Untold {
		isFresh := slices.ContainsFunc(fresh, func(f taskTell) bool { return f.MessageID == tl.MessageID })
		if !isFresh && now.Sub(tl.At) < inFlight {
			continue // its own change may still be sending it
		}
		if err := s.sendTell(ctx, t.ID, tl, !isFresh); err != nil {
			errs = append(errs, fmt.Errorf("tell %s: %w", tl.To, err))
			continue
		}
		sent = append(sent, tl.MessageID)
	}
	left := slices.DeleteFunc(slices.Clone(t.Untold), func(tl taskTell) bool { return slices.Contains(sent, tl.MessageID) })
	if len(sent) > 0 {
		if err := s.dropTells(ctx, t.ID, sent); err != nil {
			errs = append(errs, err)
			left = t.Untold
		}
	}
	return left, errors.Join(errs...)
}

// sendTell writes tl to its receiver's chat log and its sender's (the
// system keeps none), receiver first; again (a tell an earlier process
// may have written in part) writes a copy only where its id is not yet.
func (s *Store) sendTell(ctx context.Context, taskID string, tl taskTell, again bool) error {
	msg := Message{ID: tl.MessageID, SenderID: tl.From, Content: tl.Content, CreatedAt: tl.At.UTC().Format(timeFormat), RelatedTaskID: taskID, Kind: KindSystem}
	sent := msg
	sent.ReceiverID = tl.To
	inbox, err := s.files.ChatPath(tl.To)
	if err != nil {
		return err
	}
	if !again {
		if tl.From == storage.SystemSender {
			return s.files.AppendJSONL(ctx, inbox, msg)
		}
		return s.writeBoth(ctx, OutgoingMessage{From: tl.From, To: tl.To}, msg, sent)
	}
	copies := []struct {
		path string
		m    Message
	}{{inbox, msg}}
	if tl.From != storage.SystemSender {
		outbox, err := s.files.ChatPath(tl.From)
		if err != nil {
			return err
		}
		copies = append(copies, struct {
			path string
			m    Message
		}{outbox, sent})
	}
	id, _ := json.Marshal(tl.MessageID)
	for _, c := range copies {
		line, err := json.Marshal(c.m)
		if err != nil {
			return err
		}
		if err := s.files.AppendUnless(ctx, c.path, line, []byte(`"id":`+string(id))); err != nil {
			return err
		}
	}
	return nil
}

// dropTells takes the tells with the message ids sent out of task id,
// changing nothing else of it (a status edited by hand stays as the file
// says).
func (s *Store) dropTells(ctx context.Context, id string, sent []string) error {
	path, err := s.files.DocPath(storage.Tasks, id)
	if err != nil {
		return err
	}
	_, err = storage.UpdateDoc(ctx, s.files, path, storage.ModeFile, func(t *Task, exists bool) error {
		n := len(t.Untold)
		t.Untold = slices.DeleteFunc(t.Untold, func(tl taskTell) bool { return slices.Contains(sent, tl.MessageID) })
		if !exists || len(t.Untold) == n {
			return storage.ErrNoChange
		}
		if t.HandStatus != "" {
			t.Status = t.HandStatus // written back as the human left it
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("task %s: told, but not recorded as told: %w", id, err)
	}
	return nil
}

// untoldTaskProblems is doctor's report of the tasks whose end was not
// told (a process killed between the status and the message, or a send
// that failed); with repair, it tells them (sendTells, each copy once).
func (s *Store) untoldTaskProblems(ctx context.Context, repair bool) ([]storage.Problem, error) {
	now := time.Now()
	var problems []storage.Problem
	var errs []error
	err := storage.EachDoc(s.files, storage.Tasks, func(path string, t Task) error {
		var due []taskTell
		for _, tl := range t.Untold {
			if now.Sub(tl.At) >= inFlight {
				due = append(due, tl)
			}
		}
		if len(due) == 0 {
			return nil
		}
		told := false
		if repair {
			_, err := s.sendTells(ctx, t, nil, now)
			errs = append(errs, err)
			told = err == nil
		}
		for _, tl := range due {
			problems = append(problems, storage.Problem{Path: s.files.Rel(path), Repaired: told, Repairable: true, Reason: fmt.Sprintf(
				"task %s was set to %s at %s, and %s may not be told yet (the change stopped before its message, or the message failed): aipm doctor --repair tells them",
				t.ID, t.Status, tl.At.UTC().Format(time.RFC3339), tl.To)})
		}
		return nil
	})
	return problems, errors.Join(append(errs, err)...)
}
