package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// DelegateIn is delegate_to_chat_session's arguments.
type DelegateIn struct {
	Session
	TargetAgentID string `json:"target_agent_id" jsonschema:"agent or human, not you"`
	Purpose       string `json:"purpose" jsonschema:"what to tell or ask, and what you need back"`
	Context       string `json:"context,omitempty"`
}

// DelegationOut is delegate_to_chat_session's result.
type DelegationOut struct {
	Success      bool            `json:"success"`
	DelegationID string          `json:"delegation_id"`
	Status       string          `json:"status" jsonschema:"pending, processing, completed or failed"`
	Delegation   *DelegationView `json:"delegation"`
	Instruction  string          `json:"instruction"`
}

func delegateTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "delegate_to_chat_session",
			Description: "Have your chat session talk to someone; get_next_action brings the result. (task)",
			Annotations: mutating,
		},
		level: TaskOnly,
		add:   addDelegate,
	}
}

func addDelegate(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in DelegateIn) (*mcp.CallToolResult, DelegationOut, error) {
		ses := sessionFrom(ctx)
		cfg, err := s.config()
		if err != nil {
			return nil, DelegationOut{}, err
		}
		d, err := s.store.Delegations().Create(ctx, cfg, fsstore.NewDelegation{
			Agent: ses.Agent, TaskID: ses.TaskID, Target: in.TargetAgentID, Purpose: in.Purpose, Context: in.Context,
		})
		if err != nil {
			return nil, DelegationOut{}, fromStore(err, "agent_not_found")
		}
		return nil, DelegationOut{
			Success: true, DelegationID: d.ID, Status: d.Status, Delegation: ref(delegationView(d)),
			Instruction: fmt.Sprintf("Delegation %s is registered; your chat session will carry it out. Go on with work that does not need the answer; "+
				"when you need it, call get_next_action: it waits while the delegation is open and tells you when it is done. "+
				"get_task shows its progress and result, get_conversation_messages the messages.", d.ID),
		}, nil
	})
}

// ReportDelegationIn is report_delegation_completed's arguments.
type ReportDelegationIn struct {
	Session
	DelegationID string `json:"delegation_id"`
	Result       string `json:"result" jsonschema:"the answer, or why it failed"`
	Status       string `json:"status,omitempty" jsonschema:"completed (default) or failed"`
}

func reportDelegationTool() toolSpec {
	return toolSpec{
		tool: mcp.Tool{
			Name:        "report_delegation_completed",
			Description: "Close your task session's delegation with its result. (chat)",
			Annotations: mutating,
		},
		level: ChatOnly,
		add:   addReportDelegation,
	}
}

func addReportDelegation(srv *mcp.Server, s *Server, tool *mcp.Tool) {
	addTool(s, srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in ReportDelegationIn) (*mcp.CallToolResult, DelegationOut, error) {
		ses := sessionFrom(ctx)
		d, err := s.store.Delegations().Complete(ctx, ses.Agent, in.DelegationID, in.Status, in.Result)
		if err != nil {
			return nil, DelegationOut{}, fromStore(err, "delegation_not_found")
		}
		return nil, DelegationOut{
			Success: true, DelegationID: d.ID, Status: d.Status, Delegation: ref(delegationView(d)),
			Instruction: fmt.Sprintf("Delegation %s is %s; your task session has been woken with the result. Call get_next_action.", d.ID, d.Status),
		}, nil
	})
}

func ref[T any](v T) *T { return &v }
