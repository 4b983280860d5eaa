package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// ClaimTaskIn is claim_task's arguments (no task id: the most urgent task
// you may claim).
type ClaimTaskIn struct {
	Session
	TaskID string `json:"task_id,omitempty"`
}

// ClaimTaskOut is claim_task's result: the task, now in progress for the
// caller, and what to do next.
type ClaimTaskOut struct {
	Task        *TaskView `json:"task"`
	Instruction string    `json:"instruction"`
}

func claimTaskTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "claim_task",
			Description: "Claim a ready unassigned task (no id: most urgent).",
			Annotations: mutating,
		},
		level: Authenticated,
		add:   addClaimTask,
	}
}

// addClaimTask registers claim_task: the ready queue's one claim
// (fsstore.Store.Claim), exactly one claimant whatever races. The watcher
// starts the claimant's task session for the task, as for any task set in
// progress; a task session that claims one has ended its own work, so it
// is told to make room for it.
func addClaimTask(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in ClaimTaskIn) (*mcp.CallToolResult, ClaimTaskOut, error) {
		ses := sessionFrom(ctx)
		if in.TaskID != "" {
			if err := fsstore.CheckID(fsstore.PrefixTask, in.TaskID); err != nil {
				return nil, ClaimTaskOut{}, toolErr("invalid_task_id", err.Error())
			}
		}
		cfg, err := s.config()
		if err != nil {
			return nil, ClaimTaskOut{}, err
		}
		t, err := s.store.Claim(ctx, cfg, ses.Agent, in.TaskID)
		if err != nil {
			return nil, ClaimTaskOut{}, fromStore(err, "task_not_found")
		}
		then := "aipm starts your task session for it; carry on here: call get_next_action."
		if ses.Purpose == fsstore.PurposeTask {
			then = "aipm starts a task session for it: call logout, then exit."
		}
		return nil, ClaimTaskOut{
			Task:        taskRef(&t),
			Instruction: fmt.Sprintf("Task %s (%q) is yours and in progress: %s", t.ID, t.Title, then),
		}, nil
	})
}
