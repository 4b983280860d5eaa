package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

type NextActionIn struct {
	Session
	WaitSeconds int `json:"wait_seconds,omitempty" jsonschema:"chat sessions: how long to wait for something to arrive (default from the project config, at most 50)"`
}

type NextActionOut struct {
	Action      string    `json:"action" jsonschema:"work, exit, logout, get_pending_messages or wait_for_messages"`
	Instruction string    `json:"instruction" jsonschema:"what to do now, naming the exact next tool call"`
	Task        *TaskView `json:"task,omitempty"`
	Tools       []string  `json:"tools,omitempty" jsonschema:"tools that help with this action"`
}

func addGetNextAction(srv *mcp.Server, s *Server) {
	addTool(srv, &mcp.Tool{
		Name:        "get_next_action",
		Description: "What to do next. Call it after authenticate and after finishing each step; follow its instruction.",
		Annotations: mutating,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in NextActionIn) (*mcp.CallToolResult, NextActionOut, error) {
		ses := sessionFrom(ctx)
		if ses.Purpose == fsstore.PurposeTask {
			out, err := s.nextTaskAction(ses)
			return nil, out, err
		}
		out, err := s.nextChatAction(ctx, ses, in.WaitSeconds)
		return nil, out, err
	})
}

// nextTaskAction is the task branch of DESIGN section 8.
func (s *Server) nextTaskAction(ses fsstore.Session) (NextActionOut, error) {
	if ses.TaskID == "" {
		return NextActionOut{Action: "exit", Instruction: "This task session has no task. Call logout, then exit."}, nil
	}
	t, err := s.store.Task(ses.TaskID)
	if errors.Is(err, fsstore.ErrNotFound) {
		return NextActionOut{Action: "exit", Instruction: fmt.Sprintf("Task %s no longer exists. Call logout, then exit.", ses.TaskID)}, nil
	}
	if err != nil {
		return NextActionOut{}, fromStore(err, "task_not_found")
	}
	if t.Status != fsstore.StatusInProgress || t.Assignee != ses.Agent {
		return NextActionOut{
			Action:      "exit",
			Instruction: fmt.Sprintf("Task %s is %s (assignee %q): there is nothing for you to do on it. Call logout, then exit.", t.ID, t.Status, t.Assignee),
			Task:        taskRef(&t),
		}, nil
	}
	return NextActionOut{
		Action: "work",
		Instruction: fmt.Sprintf("Work on task %s: %s. Keep calling tools as you go; every response carries a notification line. "+
			"When finished, call report_completed(result=\"success\", summary=...); if you cannot finish, report_completed(result=\"failed\" or \"blocked\", summary=why).",
			t.ID, t.Title),
		Task:  taskRef(&t),
		Tools: []string{"get_task", "update_task_status", "report_completed", "get_notifications"},
	}, nil
}

// nextChatAction is the chat branch of DESIGN section 8: something to do
// now, or a wait, woken by fsnotify the moment the agent's chat log or
// notifications change, that ends with wait_for_messages. It never
// debounces, and it ends at once when the client cancels the call.
func (s *Server) nextChatAction(ctx context.Context, ses fsstore.Session, waitSeconds int) (NextActionOut, error) {
	cfg, err := s.config()
	if err != nil {
		return NextActionOut{}, toolErr("config_invalid", err.Error())
	}
	if waitSeconds < 0 || waitSeconds > fsstore.MaxWait {
		return NextActionOut{}, toolErr("invalid_wait", fmt.Sprintf("wait_seconds %d is out of range: use 1 to %d (clients abandon calls after 60 s)", waitSeconds, fsstore.MaxWait))
	}
	if waitSeconds == 0 {
		waitSeconds = cfg.Defaults.WaitSeconds
	}
	chat, _ := s.store.ChatPath(ses.Agent)
	notes, _ := s.store.NotificationsPath(ses.Agent)
	if err := s.store.EnsureAgentDir(ses.Agent); err != nil {
		return NextActionOut{}, fromStore(err, "agent_not_found")
	}
	// Subscribe before the first look, so nothing that arrives between the
	// look and the wait is missed.
	sub, err := s.wake.Subscribe(chat, notes)
	if err != nil {
		return NextActionOut{}, toolErr("wait_unavailable", err.Error())
	}
	defer sub.Close()
	_, notesBefore, err := s.store.Interrupt(ctx, ses)
	if err != nil {
		return NextActionOut{}, fromStore(err, "agent_not_found")
	}
	deadline := time.Now().Add(time.Duration(waitSeconds) * time.Second)
	for {
		msgs, more, err := s.store.Unread(ctx, ses.Agent, 1, true)
		if err != nil {
			return NextActionOut{}, fromStore(err, "agent_not_found")
		}
		if len(msgs) > 0 {
			n := "a message"
			if more {
				n = "messages"
			}
			return NextActionOut{Action: "get_pending_messages", Instruction: fmt.Sprintf("You have %s from %s. Call get_pending_messages, answer with respond_chat or send_message, then call get_next_action.", n, msgs[0].SenderID)}, nil
		}
		intr, notesNow, err := s.store.Interrupt(ctx, ses)
		if err != nil {
			return NextActionOut{}, fromStore(err, "agent_not_found")
		}
		if intr != nil || notesNow > notesBefore {
			return NextActionOut{Action: "get_notifications", Instruction: "A notification arrived. Call get_notifications and act on it, then call get_next_action."}, nil
		}
		if idle, err := s.chatIdle(ses, cfg); err != nil {
			return NextActionOut{}, err
		} else if idle {
			return NextActionOut{Action: "logout", Instruction: fmt.Sprintf("Nothing has happened in this chat session for %s. Call logout, then exit; aipm starts you again when a message arrives.", cfg.Defaults.ChatIdleTimeout.Duration)}, nil
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return NextActionOut{Action: "wait_for_messages", Instruction: "Nothing new yet. Call get_next_action again now."}, nil
		}
		s.log.Debug("waiting", "agent", ses.Agent, "session", ses.ID, "for", remaining.Round(time.Millisecond))
		if _, err := sub.Wait(ctx, remaining); err != nil {
			return NextActionOut{}, err // the client cancelled the call, or the server is stopping
		}
	}
}

// chatIdle says whether the chat session has seen no message, in or out,
// for the chat idle timeout.
func (s *Server) chatIdle(ses fsstore.Session, cfg *fsstore.Config) (bool, error) {
	last := ses.CreatedAt
	m, err := s.store.LastMessage(ses.Agent)
	if err != nil {
		return false, fromStore(err, "agent_not_found")
	}
	if m != nil {
		if t, err := time.Parse(time.RFC3339Nano, m.CreatedAt); err == nil && t.After(last) {
			last = t
		}
	}
	return time.Since(last) > cfg.Defaults.ChatIdleTimeout.Duration, nil
}
