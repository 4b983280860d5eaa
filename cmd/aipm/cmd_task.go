package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"aipm/fsstore"
)

// cliActor is who a change is made by when --as is not given.
const cliActor = "cli"

func taskCommands() []command {
	return []command{
		{"add", "task add TITLE [--description D] [--assignee AGENT] [--priority low|normal|high|urgent] [--status backlog|todo|in_progress] [--parent ID] [--as HUMAN]", runTaskAdd},
		{"list", "task list [--status S] [--assignee AGENT] [--json]", runTaskList},
		{"show", "task show ID [--json]", runTaskShow},
		{"assign", "task assign ID AGENT|--none [--as HUMAN]", runTaskAssign},
		{"status", "task status ID backlog|todo|in_progress|blocked|done|cancelled [--reason TEXT] [--as AGENT]", runTaskStatus},
		{"approve", "task approve ID [--as HUMAN]", runTaskApprove},
		{"reject", "task reject ID [--reason TEXT] [--as HUMAN]", runTaskReject},
	}
}

func runTask(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help") {
		for _, c := range taskCommands() {
			fmt.Fprintf(e.stdout, "aipm %s\n", c.summary)
		}
		return nil
	}
	var names []string
	for _, c := range taskCommands() {
		if len(args) > 0 && c.name == args[0] {
			return c.run(ctx, e, args[1:])
		}
		names = append(names, c.name)
	}
	if len(args) == 0 {
		return usageError("task needs a subcommand: %s (aipm task help shows their arguments)", strings.Join(names, ", "))
	}
	return usageError("unknown task subcommand %q: use one of %s (aipm task help shows their arguments)", args[0], strings.Join(names, ", "))
}

func runTaskAdd(ctx context.Context, e *env, args []string) error {
	fs := e.flags("task add")
	var in fsstore.NewTask
	fs.StringVar(&in.Description, "description", "", "details of the work")
	fs.StringVar(&in.Assignee, "assignee", "", "agent who does the work")
	fs.StringVar(&in.Priority, "priority", "normal", strings.Join(fsstore.Priorities, ", "))
	fs.StringVar(&in.Status, "status", fsstore.StatusTodo, "backlog, todo or in_progress")
	fs.StringVar(&in.ParentID, "parent", "", "id of the parent task")
	as := fs.String("as", "", "agent (a human) making the request; default cli")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("task add needs exactly one TITLE (quote a title with spaces), got %d arguments", len(pos))
	}
	in.Title = pos[0]
	if !slices.Contains(fsstore.Priorities, in.Priority) {
		return usageError("task add: priority %q is invalid: use one of %s", in.Priority, strings.Join(fsstore.Priorities, ", "))
	}
	if err := fsstore.CheckStatus(in.Status); err != nil {
		return usageError("task add: %v", err)
	}
	if in.ParentID != "" {
		if err := taskIDArg("task add --parent", in.ParentID); err != nil {
			return err
		}
	}
	store, cfg, err := e.open()
	if err != nil {
		return err
	}
	if in.Requester, err = actor(cfg, *as); err != nil {
		return err
	}
	if err := agentRef(cfg, in.Assignee, "assignee"); err != nil {
		return err
	}
	t, err := store.CreateTask(ctx, cfg, in)
	if err != nil {
		return fmt.Errorf("task add: %w", err)
	}
	fmt.Fprintf(e.stdout, "created %s %q\n", t.ID, t.Title)
	return nil
}

func runTaskList(ctx context.Context, e *env, args []string) error {
	fs := e.flags("task list")
	var f fsstore.TaskFilter
	fs.StringVar(&f.Status, "status", "", "only tasks with this status")
	fs.StringVar(&f.Assignee, "assignee", "", "only tasks assigned to this agent")
	asJSON := fs.Bool("json", false, "one JSON task per line")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("task list takes no arguments, got %q: filter with --status or --assignee", pos[0])
	}
	if f.Status != "" {
		if err := fsstore.CheckStatus(f.Status); err != nil {
			return usageError("task list: %v", err)
		}
	}
	store, _, err := e.open()
	if err != nil {
		return err
	}
	tasks, problems, err := store.Tasks(f)
	if err != nil {
		return fmt.Errorf("task list: %w", err)
	}
	for _, p := range problems {
		fmt.Fprintf(e.stderr, "aipm: warning: skipped %v: fix it by hand (aipm doctor lists every problem)\n", p)
	}
	switch {
	case *asJSON:
		if err := writeJSONLines(e, tasks); err != nil {
			return fmt.Errorf("task list: %w", err)
		}
		return nil
	case len(tasks) == 0 && f == fsstore.TaskFilter{}:
		fmt.Fprintln(e.stdout, "no tasks: add one with aipm task add TITLE")
		return nil
	case len(tasks) == 0:
		fmt.Fprintln(e.stdout, "no matching tasks")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tPRIORITY\tASSIGNEE\tTITLE")
	for _, t := range tasks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.ID, statusText(t), t.Priority, dash(t.Assignee), strings.Join(strings.Fields(t.Title), " "))
	}
	return tw.Flush()
}

// statusText is the status, with the approval state when it is not approved.
func statusText(t fsstore.Task) string {
	if t.ApprovalStatus == fsstore.ApprovalApproved || t.ApprovalStatus == "" {
		return t.Status
	}
	return t.Status + " (" + t.ApprovalStatus + ")"
}

// writeJSONLines prints each item as one compact JSON line (tasks, messages).
func writeJSONLines[T any](e *env, items []T) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetEscapeHTML(false)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			return fmt.Errorf("write JSON: %w", err)
		}
	}
	return nil
}

func runTaskShow(ctx context.Context, e *env, args []string) error {
	fs := e.flags("task show")
	asJSON := fs.Bool("json", false, "print the task's JSON document")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("task show needs exactly one task id: aipm task show ID")
	}
	if err := taskIDArg("task show", pos[0]); err != nil {
		return err
	}
	store, _, err := e.open()
	if err != nil {
		return err
	}
	t, err := store.Task(pos[0])
	if err != nil {
		return fmt.Errorf("task show: %w", err)
	}
	if *asJSON {
		data, err := fsstore.EncodeDoc(t)
		if err != nil {
			return fmt.Errorf("task show: %w", err)
		}
		_, err = e.stdout.Write(data)
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 1, ' ', 0)
	for _, f := range taskFields(t) {
		if f.value != "" {
			// continuation lines of a multi-line value stay in the value column
			fmt.Fprintf(tw, "%s:\t%s\n", f.label, strings.ReplaceAll(f.value, "\n", "\n\t"))
		}
	}
	return tw.Flush()
}

// taskFields lists every field of a task with its label, in display order.
func taskFields(t fsstore.Task) []struct{ label, value string } {
	return []struct{ label, value string }{
		{"id", t.ID},
		{"title", t.Title},
		{"status", t.Status},
		{"approval", t.ApprovalStatus},
		{"priority", t.Priority},
		{"assignee", t.Assignee},
		{"parent", t.ParentID},
		{"requester", t.Requester},
		{"status changed by", t.StatusChangedBy},
		{"status changed at", timeText(t.StatusChangedAt)},
		{"blocked reason", t.BlockedReason},
		{"result", t.Result},
		{"summary", t.Summary},
		{"created", timeText(t.CreatedAt)},
		{"updated", timeText(t.UpdatedAt)},
		{"description", t.Description},
	}
}

func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func runTaskAssign(ctx context.Context, e *env, args []string) error {
	fs := e.flags("task assign")
	none := fs.Bool("none", false, "remove the assignee")
	as := fs.String("as", "", "agent (a human) making the change; default cli")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 && !(*none && len(pos) == 1) {
		return usageError("task assign needs a task id and an agent: aipm task assign ID AGENT, or aipm task assign ID --none")
	}
	if *none && len(pos) == 2 {
		return usageError("task assign: give an agent or --none, not both")
	}
	if err := taskIDArg("task assign", pos[0]); err != nil {
		return err
	}
	agent := ""
	if !*none {
		agent = pos[1]
	}
	store, cfg, by, err := e.openAs(*as)
	if err != nil {
		return err
	}
	if err := agentRef(cfg, agent, "agent"); err != nil {
		return err
	}
	t, err := store.UpdateTask(ctx, cfg, pos[0], by, fsstore.TaskChange{Assignee: &agent})
	if err != nil {
		return fmt.Errorf("task assign: %w", err)
	}
	if agent == "" {
		fmt.Fprintf(e.stdout, "unassigned %s\n", t.ID)
	} else {
		fmt.Fprintf(e.stdout, "assigned %s to %s\n", t.ID, agent)
	}
	return nil
}

func runTaskStatus(ctx context.Context, e *env, args []string) error {
	fs := e.flags("task status")
	reason := fs.String("reason", "", "why (for blocked or cancelled)")
	as := fs.String("as", "", "agent making the change; default cli")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageError("task status needs a task id and a status: aipm task status ID %s", strings.Join(fsstore.Statuses, "|"))
	}
	id, status := pos[0], pos[1]
	if err := taskIDArg("task status", id); err != nil {
		return err
	}
	if err := fsstore.CheckStatus(status); err != nil {
		return usageError("task status: %v", err)
	}
	if *reason != "" && status != fsstore.StatusBlocked && status != fsstore.StatusCancelled {
		return usageError("task status: --reason goes with blocked or cancelled, not %s", status)
	}
	store, cfg, by, err := e.openAs(*as)
	if err != nil {
		return err
	}
	before, err := store.Task(id)
	if err != nil {
		return fmt.Errorf("task status: %w", err)
	}
	after, err := store.UpdateTask(ctx, cfg, id, by, fsstore.TaskChange{Status: status, Reason: *reason})
	if err != nil {
		return fmt.Errorf("task status: %w", err)
	}
	fmt.Fprintf(e.stdout, "%s: %s -> %s\n", after.ID, before.Status, after.Status)
	if fsstore.Interrupts(before, after, by) {
		fmt.Fprintf(e.stdout, "interrupted %s\n", after.Assignee)
	}
	return nil
}

func runTaskApprove(ctx context.Context, e *env, args []string) error {
	return decideTask(ctx, e, "approve", fsstore.ApprovalApproved, args)
}

func runTaskReject(ctx context.Context, e *env, args []string) error {
	return decideTask(ctx, e, "reject", fsstore.ApprovalRejected, args)
}

// decideTask approves or rejects a task waiting for approval. A rejection
// is told to the AI agent that requested the task, with the reason.
func decideTask(ctx context.Context, e *env, verb, approval string, args []string) error {
	fs := e.flags("task " + verb)
	as := fs.String("as", "", "agent (a human) deciding; default cli")
	var reason *string
	if approval == fsstore.ApprovalRejected {
		reason = fs.String("reason", "", "why, told to the requester")
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("task %s needs exactly one task id: aipm task %s ID", verb, verb)
	}
	if err := taskIDArg("task "+verb, pos[0]); err != nil {
		return err
	}
	store, cfg, by, err := e.openAs(*as)
	if err != nil {
		return err
	}
	ch := fsstore.TaskChange{Approval: approval}
	if reason != nil {
		ch.Reason = *reason
	}
	t, err := store.UpdateTask(ctx, cfg, pos[0], by, ch)
	if err != nil {
		return fmt.Errorf("task %s: %w", verb, err)
	}
	if approval == fsstore.ApprovalApproved {
		fmt.Fprintf(e.stdout, "approved %s\n", t.ID)
		return nil
	}
	fmt.Fprintf(e.stdout, "rejected %s (status %s)\n", t.ID, t.Status)
	return notifyRejected(ctx, e, store, cfg, t, by, ch.Reason)
}

// notifyRejected tells the task's requester, if it is an AI agent other
// than the one deciding, that its request was rejected and why.
func notifyRejected(ctx context.Context, e *env, store *fsstore.Store, cfg *fsstore.Config, t fsstore.Task, by, reason string) error {
	a, ok := cfg.Agent(t.Requester)
	if !ok || a.Type != fsstore.AgentAI || a.ID == by {
		return nil
	}
	if reason == "" {
		reason = "no reason given"
	}
	msg := fmt.Sprintf("%s rejected your task request %s (%q): %s. Do not start it; ask %s in chat if you disagree.", by, t.ID, t.Title, reason, by)
	if _, err := store.Notify(ctx, a.ID, fsstore.Notification{Type: fsstore.NotifyInfo, TaskID: t.ID, From: by, Message: msg}); err != nil {
		return fmt.Errorf("task %s rejected, but %s was not told: %w", t.ID, a.ID, err)
	}
	fmt.Fprintf(e.stdout, "notified %s\n", a.ID)
	return nil
}

// taskIDArg checks the shape of a task id given on the command line.
func taskIDArg(what, id string) error {
	if err := fsstore.CheckID(fsstore.PrefixTask, id); err != nil {
		return usageError("%s: %v", what, err)
	}
	return nil
}

// agentRef checks that id, if given, names an agent of the project.
func agentRef(cfg *fsstore.Config, id, what string) error {
	if id == "" {
		return nil
	}
	if err := fsstore.CheckAgentID(id); err != nil {
		if what == "agent" { // the message already says "agent id"
			return usageError("%v", err)
		}
		return usageError("%s: %v", what, err)
	}
	if _, ok := cfg.Agent(id); !ok {
		return fmt.Errorf("%s %q is not an agent of this project: see aipm agent list", what, id)
	}
	return nil
}

// actor is who makes a change: --as, which must be an agent of the
// project, else cliActor.
// openAs opens the project and resolves who acts: --as, or cli.
func (e *env) openAs(as string) (*fsstore.Store, *fsstore.Config, string, error) {
	store, cfg, err := e.open()
	if err != nil {
		return nil, nil, "", err
	}
	by, err := actor(cfg, as)
	if err != nil {
		return nil, nil, "", err
	}
	return store, cfg, by, nil
}

func actor(cfg *fsstore.Config, as string) (string, error) {
	if as == "" {
		return cliActor, nil
	}
	if err := agentRef(cfg, as, "--as"); err != nil {
		return "", err
	}
	return as, nil
}
