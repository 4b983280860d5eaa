package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// TaskOut is get_task's answer: one task by id, or, asked without one,
// the caller's current task and other open tasks. When the task is the
// session's own, its and its parent's delegations and conversations come
// with it; the live leases taken for it always do.
type TaskOut struct {
	Task          *TaskView          `json:"task,omitempty" jsonschema:"without task_id: this session's task, or your task in progress; absent if none"`
	Assigned      []TaskView         `json:"assigned,omitzero" jsonschema:"without task_id: your other open tasks"`
	TaskIDs       []string           `json:"task_ids,omitzero" jsonschema:"your session's task and its parent"`
	Delegations   []DelegationView   `json:"delegations,omitzero"`
	Conversations []ConversationView `json:"conversations,omitzero"`
	Leases        []LeaseView        `json:"leases,omitempty" jsonschema:"live leases taken for the task"`
}

// GetTaskIn is get_task's arguments (no task id: your task).
type GetTaskIn struct {
	Session
	TaskID string `json:"task_id,omitempty"`
}

func getTaskTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "get_task",
			Description: "A task by id; else yours, with conversations, and your others.",
			Annotations: readOnly,
		},
		level: Authenticated,
		add:   addGetTask,
	}
}

func addGetTask(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in GetTaskIn) (*mcp.CallToolResult, TaskOut, error) {
		ses := sessionFrom(ctx)
		var out TaskOut
		if in.TaskID != "" {
			t, err := s.store.Task(in.TaskID)
			if err != nil {
				return nil, TaskOut{}, fromStore(err, "task_not_found")
			}
			out.Task = taskRef(&t)
		} else if err := s.myTasks(ses, &out); err != nil {
			return nil, TaskOut{}, err
		}
		if out.Task == nil {
			return nil, out, nil
		}
		deps, err := s.store.TaskDeps([]string{out.Task.ID})
		if err != nil {
			return nil, TaskOut{}, fromStore(err, "task_not_found")
		}
		out.Task.WaitingFor = fsstore.WaitsText(deps[out.Task.ID].Waits)
		if ses.TaskID != "" && out.Task.ID == ses.TaskID {
			cfg, err := s.config()
			if err != nil {
				return nil, TaskOut{}, err
			}
			tc, err := s.store.Delegations().TaskConversations(ctx, cfg, ses.TaskID)
			if err != nil {
				return nil, TaskOut{}, fromStore(err, "task_not_found")
			}
			out.TaskIDs, out.Delegations, out.Conversations = nonNil(tc.TaskIDs), nonNil(delegationViews(tc.Delegations)), nonNil(conversationViews(tc.Conversations))
		}
		leases, err := s.store.Leases()
		if err != nil {
			return nil, TaskOut{}, err
		}
		for _, l := range leases {
			if l.TaskID == out.Task.ID {
				out.Leases = append(out.Leases, leaseView(l))
			}
		}
		return nil, out, nil
	})
}

// myTasks fills out with the caller's current task (the session's, or
// its task in progress) and its other open tasks.
func (s *Server) myTasks(ses fsstore.Session, out *TaskOut) error {
	mine, _, _, err := s.store.Tasks(fsstore.TaskFilter{Assignee: ses.Agent, Open: true})
	if err != nil {
		return fromStore(err, "task_not_found")
	}
	out.Assigned = []TaskView{}
	for i, t := range mine {
		current := (ses.TaskID != "" && t.ID == ses.TaskID) || (ses.TaskID == "" && out.Task == nil && t.Status == fsstore.StatusInProgress)
		if current {
			out.Task = taskRef(&mine[i])
		} else {
			out.Assigned = append(out.Assigned, taskView(t))
		}
	}
	if out.Task == nil && ses.TaskID != "" {
		// The session's task is finished (or was reassigned): still its task.
		if t, err := s.store.Task(ses.TaskID); err == nil && t.Assignee == ses.Agent {
			out.Task = taskRef(&t)
		}
	}
	return nil
}

// ListTasksIn is list_tasks' arguments: the filters and the page.
type ListTasksIn struct {
	Session
	Status   string `json:"status,omitempty"`
	Assignee string `json:"assignee,omitempty"`
	ParentID string `json:"parent_id,omitempty"`
	Limit    int    `json:"limit,omitempty" jsonschema:"default 50, at most 500"`
}

// ListTasksOut is list_tasks' result.
type ListTasksOut struct {
	Tasks   []TaskView `json:"tasks"`
	HasMore bool       `json:"has_more"`
}

func listTasksTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "list_tasks",
			Description: "Tasks of this project, newest first.",
			InputSchema: enums{"status": fsstore.Statuses},
			Annotations: readOnly,
		},
		level: Authenticated,
		page:  taskPage,
		add:   addListTasks,
	}
}

func addListTasks(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in ListTasksIn) (*mcp.CallToolResult, ListTasksOut, error) {
		limit, err := taskPage.of(in.Limit)
		if err != nil {
			return nil, ListTasksOut{}, err
		}
		if in.Assignee != "" {
			if err := fsstore.CheckAgentID(in.Assignee); err != nil {
				return nil, ListTasksOut{}, toolErr("invalid_agent_id", err.Error())
			}
		}
		if in.ParentID != "" {
			if err := fsstore.CheckID(fsstore.PrefixTask, in.ParentID); err != nil {
				return nil, ListTasksOut{}, toolErr("invalid_task_id", err.Error())
			}
		}
		tasks, more, _, err := s.store.Tasks(fsstore.TaskFilter{Status: in.Status, Assignee: in.Assignee, ParentID: in.ParentID, Limit: limit})
		if err != nil {
			return nil, ListTasksOut{}, fromStore(err, "task_not_found")
		}
		return nil, ListTasksOut{Tasks: taskViews(tasks), HasMore: more}, nil
	})
}

// UpdateTaskStatusIn is update_task_status's arguments.
type UpdateTaskStatusIn struct {
	Session
	Status string `json:"status"`
	Reason string `json:"reason,omitempty" jsonschema:"why; required for blocked"`
	TaskID string `json:"task_id,omitempty"`
}

func updateTaskStatusTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "update_task_status",
			Description: "Set your task's status; to finish, use report_completed. (task)",
			InputSchema: enums{"status": fsstore.Statuses},
			Annotations: idempotent,
		},
		level:           TaskOnly,
		passesInterrupt: true,
		add:             addUpdateTaskStatus,
	}
}

func addUpdateTaskStatus(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in UpdateTaskStatusIn) (*mcp.CallToolResult, TaskOut, error) {
		ses := sessionFrom(ctx)
		id := in.TaskID
		if id == "" {
			id = ses.TaskID
		}
		if id == "" {
			return nil, TaskOut{}, toolErr("task_required", "this session has no task: pass task_id")
		}
		cfg, err := s.config()
		if err != nil {
			return nil, TaskOut{}, err
		}
		after, err := s.store.UpdateTask(ctx, cfg, id, ses.Agent, fsstore.TaskChange{Status: in.Status, Reason: in.Reason, Owner: ses.Agent})
		if err != nil {
			return nil, TaskOut{}, fromStore(err, "task_not_found")
		}
		return nil, TaskOut{Task: taskRef(&after)}, nil
	})
}

// ReportCompletedIn is report_completed's arguments.
type ReportCompletedIn struct {
	Session
	Result  string `json:"result"`
	Summary string `json:"summary" jsonschema:"what you did and what is left"`
	Acknowledgement
}

// ReportCompletedOut is report_completed's result.
type ReportCompletedOut struct {
	Action      string    `json:"action"`
	Instruction string    `json:"instruction"`
	Task        *TaskView `json:"task"`
}

func reportCompletedTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "report_completed",
			Description: "End task and session (success: done; failed, blocked: blocked; cancelled: answers a cancel). (task)",
			InputSchema: enums{"result": fsstore.ReportResults},
			Annotations: idempotent,
		},
		level:           TaskOnly,
		passesInterrupt: true,
		takesAck:        true,
		add:             addReportCompleted,
	}
}

func addReportCompleted(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in ReportCompletedIn) (*mcp.CallToolResult, ReportCompletedOut, error) {
		ses := sessionFrom(ctx)
		ch, err := fsstore.ReportChange(in.Result, in.Summary)
		if err != nil {
			return nil, ReportCompletedOut{}, fromStore(err, "task_not_found")
		}
		if ses.TaskID == "" {
			return nil, ReportCompletedOut{}, toolErr("task_required", "this session has no task to report on: call logout and exit")
		}
		cfg, err := s.config()
		if err != nil {
			return nil, ReportCompletedOut{}, err
		}
		after, err := s.store.UpdateTask(ctx, cfg, ses.TaskID, ses.Agent, ch)
		if err != nil {
			return nil, ReportCompletedOut{}, fromStore(err, "task_not_found")
		}
		if _, err := s.store.EndSession(ctx, ses.ID, fsstore.EndCompleted); err != nil {
			return nil, ReportCompletedOut{}, fromStore(err, "session_not_found")
		}
		return nil, ReportCompletedOut{
			Action:      "exit",
			Instruction: fmt.Sprintf("Task %s is %s and your session has ended. Exit now.", after.ID, after.Status),
			Task:        taskRef(&after),
		}, nil
	})
}
