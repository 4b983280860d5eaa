package sim

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// markerCallRE finds the calls a get_pending_messages instruction names
// for the chat markers of the latest message (aipm serve parses the
// markers; the sim, like a model, does what the instruction says).
var markerCallRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`call (report_block_from_chat|report_completion_from_chat|list_tasks)\b`)
})

// obeyMarkers makes the calls instruction names for a marked message:
// report_block_from_chat and report_completion_from_chat with their
// defaults (the task in progress, the text after the marker), and, for
// @@タスク確認, list_tasks answered to the sender with respond_chat.
func (a *agent) obeyMarkers(ctx context.Context, instruction string) error {
	var done []string
	for _, m := range markerCallRE().FindAllStringSubmatch(instruction, -1) {
		tool := m[1]
		if slices.Contains(done, tool) {
			continue
		}
		done = append(done, tool)
		if tool == "list_tasks" {
			if err := a.answerTasks(ctx); err != nil {
				return err
			}
			continue
		}
		r, err := a.send(ctx, tool, map[string]any{})
		if err != nil {
			return err
		}
		if !r.isError {
			a.say("%s: %s", tool, firstSentence(r.str("instruction")))
		}
	}
	return nil
}

// answerTasks answers @@タスク確認: the agent's tasks, read with
// list_tasks, told to the sender with respond_chat.
func (a *agent) answerTasks(ctx context.Context) error {
	r, err := a.send(ctx, "list_tasks", map[string]any{"assignee": a.o.Agent})
	if err != nil || r.isError {
		return err
	}
	tasks, _ := r.data["tasks"].([]any)
	var parts []string
	for _, t := range tasks {
		task, _ := t.(map[string]any)
		parts = append(parts, fmt.Sprintf("%v %q %v", task["id"], task["title"], task["status"]))
	}
	answer := "My tasks: none."
	if len(parts) > 0 {
		answer = "My tasks: " + strings.Join(parts, "; ") + "."
	}
	if _, err := a.send(ctx, "respond_chat", map[string]any{"content": answer}); err != nil {
		return err
	}
	a.say("answered @@タスク確認: %s", answer)
	return nil
}

// decideReport is a task session's decision on a completion report that
// get_next_action's work answer names (@@完了報告): the sim takes the
// reporter's word, reads the report and reports the task done. It says
// whether there was one.
func (a *agent) decideReport(ctx context.Context, r result) (bool, error) {
	if !strings.Contains(r.str("instruction"), "decide on a completion report") {
		return false, nil
	}
	task, _ := r.data["task"].(map[string]any)
	id, _ := task["id"].(string)
	a.call(ctx, "get_notifications", map[string]any{})
	return a.reportDone(ctx, id)
}

// checkReports reads the notifications a work step's answer announces
// (its notification line) and decides on a completion report among them
// as decideReport does; it says whether the task was reported done.
func (a *agent) checkReports(ctx context.Context, r result) (bool, error) {
	if !strings.Contains(r.str("notification"), "get_notifications") {
		return false, nil
	}
	return a.readNotifications(ctx, true)
}

// readNotifications reads the session's notifications and does what they
// say: an interrupt is obeyed (errInterrupt), and with decide a completion
// report on the task is decided. An interrupt read here, not as a call's
// INTERRUPT answer (one written while the last call ran shows in its
// notification count; get_next_action answers get_notifications for one
// written before it), is obeyed all the same.
func (a *agent) readNotifications(ctx context.Context, decide bool) (bool, error) {
	n, err := a.call(ctx, "get_notifications", map[string]any{})
	if err != nil {
		return false, err
	}
	notes, _ := n.data["notifications"].([]any)
	for _, x := range notes {
		note, _ := x.(map[string]any)
		switch {
		case note["type"] == "interrupt":
			a.say("interrupted: %s", firstSentence(fmt.Sprint(note["message"])))
			return true, a.comply(ctx, fmt.Sprint(note["instruction"]))
		case decide && note["action"] == "decide":
			return a.reportDone(ctx, fmt.Sprint(note["task_id"]))
		}
	}
	return false, nil
}

// reportDone reports task id done on a completion report.
func (a *agent) reportDone(ctx context.Context, id string) (bool, error) {
	res, err := a.call(ctx, "report_completed", map[string]any{"result": "success", "summary": "done, as the completion report said"})
	if err != nil {
		return true, err
	}
	if res.isError {
		return true, fmt.Errorf("report_completed: %s", res.text)
	}
	a.say("completion report on %s accepted: reported it done", id)
	return true, nil
}
