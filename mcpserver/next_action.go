package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

type NextActionIn struct {
	Session
}

type NextActionOut struct {
	Action      string        `json:"action" jsonschema:"work, exit, logout, get_pending_messages or wait_for_messages"`
	Instruction string        `json:"instruction" jsonschema:"what to do now, naming the exact next tool call"`
	Task        *fsstore.Task `json:"task,omitempty"`
	Tools       []string      `json:"tools,omitempty" jsonschema:"tools that help with this action"`
}

func addGetNextAction(srv *mcp.Server, s *Server) {
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "get_next_action",
		Description: "What to do next. Call it after authenticate and after finishing each step; follow its instruction.",
		Annotations: mutating,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in NextActionIn) (*mcp.CallToolResult, NextActionOut, error) {
		ses := sessionFrom(ctx)
		if ses.Purpose == fsstore.PurposeTask {
			out, err := s.nextTaskAction(ses)
			return nil, out, err
		}
		out, err := s.nextChatAction(ctx, ses)
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
			Task:        &t,
		}, nil
	}
	return NextActionOut{
		Action: "work",
		Instruction: fmt.Sprintf("Work on task %s: %s. Keep calling tools as you go; every response carries a notification line. "+
			"When finished, call report_completed(result=\"success\", summary=...); if you cannot finish, report_completed(result=\"failed\" or \"blocked\", summary=why).",
			t.ID, t.Title),
		Task:  &t,
		Tools: []string{"get_task", "update_task_status", "report_completed", "get_notifications"},
	}, nil
}

// nextChatAction is the chat branch of DESIGN section 8.
func (s *Server) nextChatAction(ctx context.Context, ses fsstore.Session) (NextActionOut, error) {
	return NextActionOut{Action: "exit", Instruction: "Chat sessions have nothing to do in this version of aipm. Call logout, then exit."}, nil
}
