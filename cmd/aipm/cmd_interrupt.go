package main

import (
	"context"
	"fmt"
	"strings"

	"aipm/fsstore"
)

// runInterrupt tells an AI agent to stop: the notification replaces the
// response of its next tool call (DESIGN section 6).
func runInterrupt(ctx context.Context, e *env, args []string) error {
	fs := e.flags("interrupt")
	taskID := fs.String("task", "", "the task the agent must stop working on")
	as := fs.String("as", "", "agent (a human) interrupting; default cli")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageError("interrupt needs an agent and a reason: aipm interrupt AGENT \"REASON\" [--task ID]")
	}
	agent, reason := pos[0], strings.TrimSpace(pos[1])
	if reason == "" {
		return usageError("interrupt needs a reason: say why %s must stop", agent)
	}
	if *taskID != "" {
		if err := taskIDArg("interrupt --task", *taskID); err != nil {
			return err
		}
	}
	store, cfg, by, err := e.openAs(*as)
	if err != nil {
		return err
	}
	if err := interruptible(cfg, agent); err != nil {
		return err
	}
	n := fsstore.Notification{Type: fsstore.NotifyInterrupt, From: by}
	if *taskID == "" {
		n.Message = fmt.Sprintf("%s interrupted you: %s. Stop what you are doing: in a task session call report_completed(result=\"blocked\"), otherwise call logout.", by, reason)
	} else {
		t, err := store.Task(*taskID)
		if err != nil {
			return fmt.Errorf("interrupt: %w", err)
		}
		if t.Assignee != agent {
			return fmt.Errorf("interrupt: task %s is assigned to %s, not %s: interrupt its assignee, or leave out --task", t.ID, dash(t.Assignee), agent)
		}
		n.TaskID = t.ID
		n.Message = fmt.Sprintf("%s interrupted your task %s (%q): %s. Stop working on it and call report_completed(result=\"blocked\").", by, t.ID, t.Title, reason)
	}
	if _, err := store.Notify(ctx, agent, n); err != nil {
		return fmt.Errorf("interrupt %s: %w", agent, err)
	}
	fmt.Fprintf(e.stdout, "interrupted %s\n", agent)
	return nil
}

// interruptible checks that agent is an AI agent of the project: humans
// run no sessions to interrupt.
func interruptible(cfg *fsstore.Config, agent string) error {
	if err := agentRef(cfg, agent, "agent"); err != nil {
		return err
	}
	if a, _ := cfg.Agent(agent); a.Type != fsstore.AgentAI {
		return fmt.Errorf("agent %q is a %s: only AI agents' sessions can be interrupted", agent, a.Type)
	}
	return nil
}
